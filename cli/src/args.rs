//! Minimal `--flag value` parsing: the CLI has few options and no dependency for them.

use std::str::FromStr;

/// Flags and positionals of one subcommand.
pub struct Args {
    flags: Vec<(String, String)>,
    pub positional: Vec<String>,
}

impl Args {
    pub fn parse(argv: &[String], known: &[&str]) -> Result<Args, String> {
        let mut flags = Vec::new();
        let mut positional = Vec::new();
        let mut it = argv.iter();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                if !known.contains(&name) {
                    return Err(format!("unknown option --{name}"));
                }
                let v = it.next().ok_or(format!("--{name} needs a value"))?;
                flags.push((name.to_owned(), v.clone()));
            } else {
                positional.push(a.clone());
            }
        }
        Ok(Args { flags, positional })
    }

    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.flags.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => v
                .parse()
                .map_err(|_| format!("bad value for --{name}: {v}")),
            None => Ok(default),
        }
    }

    pub fn opt(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}
