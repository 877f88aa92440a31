//! The commands' output and failures. Output goes to stdout, whose reader may close it early
//! (`rshm dump STORE | head`): the command then ends quietly with status 0, as `ls | head`
//! shells expect of a listing, where `println!` would panic (status 101).

use std::fmt;
use std::io::{self, Write};

/// Why a command stopped before its end.
#[derive(Debug)]
pub enum Fail {
    /// Its output's reader closed the pipe: nothing more to say, and no error.
    Closed,
    /// An error, printed as `rshm: ...`.
    Error(String),
}

impl From<String> for Fail {
    fn from(e: String) -> Self {
        Fail::Error(e)
    }
}

impl From<&str> for Fail {
    fn from(e: &str) -> Self {
        Fail::Error(e.to_owned())
    }
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::BrokenPipe => Fail::Closed,
            _ => Fail::Error(format!("writing the output: {e}")),
        }
    }
}

/// One line to stdout ([`outln!`]).
pub fn line(args: fmt::Arguments) -> Result<(), Fail> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// `println!` for a command: a closed pipe is [`Fail::Closed`], returned with `?`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
