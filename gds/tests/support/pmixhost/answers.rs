//! pmix-client's answer lines.

/// One pmix-client answer line: `<id> <rank> <status> <type> <value>`, or
/// `<id> <rank> <status> - -` when the Get failed (`type_name` and `value` are then "-").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub id: String,
    /// The rank of the client that asked.
    pub rank: u32,
    /// `PMIx_Error_string()`: "SUCCESS", "NOT-FOUND", "TIMEOUT", "NOT-SUPPORTED", ...
    pub status: String,
    /// `PMIx_Data_type_string()`, e.g. "PMIX_UINT32".
    pub type_name: String,
    /// Canonical value text (README.md, "Canonical value text").
    pub value: String,
}

/// Parse pmix-client output: query answers only (put/commit/fence lines are skipped), sorted by
/// (id, rank). Panics on a line that does not parse.
pub fn parse_answers(text: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty()
            || line.starts_with("put:")
            || line.starts_with("commit ")
            || line.starts_with("fence ")
        {
            continue;
        }
        out.push(parse_answer(line).unwrap_or_else(|e| panic!("bad answer line {line:?}: {e}")));
    }
    out.sort_by(|a, b| (&a.id, a.rank).cmp(&(&b.id, b.rank)));
    out
}

fn parse_answer(line: &str) -> Result<Answer, String> {
    let (id, rest) = line.split_once(' ').ok_or("no rank")?;
    let (rank, rest) = rest.split_once(' ').ok_or("no status")?;
    let rank: u32 = rank.parse().map_err(|_| format!("bad rank {rank:?}"))?;
    // The status string may contain blanks ("ERROR STRING NOT FOUND"); the type is "-" (then the
    // line ends in " - -") or a PMIX_* name.
    let (status, type_name, value) = if let Some(status) = rest.strip_suffix(" - -") {
        (status, "-", "-")
    } else {
        let i = rest.find(" PMIX_").ok_or("no type")?;
        let (type_name, value) = rest[i + 1..].split_once(' ').ok_or("no value")?;
        (&rest[..i], type_name, value)
    };
    if id.is_empty() || status.is_empty() || value.is_empty() {
        return Err("empty field".into());
    }
    Ok(Answer {
        id: id.into(),
        rank,
        status: status.into(),
        type_name: type_name.into(),
        value: value.into(),
    })
}
