//! How an error reads to a user, the same from the command line and from
//! Python: its message and its causes.

/// `e` and its causes, `: `-joined, as `{:#}` prints them, but leaving out a
/// cause whose message the error wrapping it already ends with (an error
/// type that both shows its source and returns it as `source()`).
pub fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let message = cause.to_string();
        if out.ends_with(&message) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&message);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that shows its source in its message and also returns it
    /// as `source()`, as the workload crate's I/O error does.
    #[derive(Debug)]
    struct Shows(std::io::Error);

    impl std::fmt::Display for Shows {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "x.csv: {}", self.0)
        }
    }

    impl std::error::Error for Shows {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(Shows(io)).context("writing the workload");
        assert_eq!(
            format!("{e:#}"),
            "writing the workload: x.csv: no such file: no such file"
        );
        assert_eq!(chain(&e), "writing the workload: x.csv: no such file");
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(chain(&plain), format!("{plain:#}"));
    }
}
