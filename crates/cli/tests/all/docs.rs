//! The user docs as a reader follows them: every relative link in README.md
//! and docs/ names a file in the repository (and, with `#anchor`, a heading
//! of it, as GitHub makes anchors), and no doc speaks of the project's
//! history (numbered work sessions, issues) instead of the tool.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every Markdown file in docs/.
fn docs() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    in_docs.sort();
    files.extend(in_docs);
    files
}

/// `text` without its fenced code blocks (whose brackets are code).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The targets of `[text](target)` links in `text`.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = &rest[..end];
            if !target.contains(char::is_whitespace) {
                found.push(target.to_string());
            }
        }
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case, spaces to hyphens,
/// other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' | '-' => Some('-'),
            c if c.is_alphanumeric() || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every heading anchor of the Markdown file at `path`.
fn anchors(path: &Path) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = HashSet::new();
    for line in prose(&std::fs::read_to_string(path).unwrap()).lines() {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let s = slug(heading.trim_start_matches('#'));
        let mut anchor = s.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{s}-{n}");
        }
        out.insert(anchor);
    }
    out
}

#[test]
fn every_link_resolves_inside_the_repository() {
    let mut bad = Vec::new();
    for doc in docs() {
        let text = prose(&std::fs::read_to_string(&doc).unwrap());
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dest = match path {
                "" => doc.clone(),
                p => doc.parent().unwrap().join(p),
            };
            let inside = dest
                .canonicalize()
                .is_ok_and(|d| d.starts_with(root().canonicalize().unwrap()));
            if !inside {
                bad.push(format!("{}: {target}: no such file here", doc.display()));
            } else if !anchor.is_empty() && dest.is_file() && !anchors(&dest).contains(anchor) {
                bad.push(format!("{}: {target}: no such heading", doc.display()));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn docs_speak_of_the_tool_not_of_its_history() {
    let mut bad = Vec::new();
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let words: Vec<&str> = lower.split_whitespace().collect();
            let numbered = words.windows(2).any(|w| {
                ["session", "sessions", "issue", "issues"].contains(&w[0])
                    && w[1]
                        .trim_start_matches('#')
                        .starts_with(|c: char| c.is_ascii_digit())
            });
            if numbered || lower.contains("work period") || lower.contains("design.md") {
                bad.push(format!("{}:{}: {line}", doc.display(), n + 1));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_checks_catch_what_they_look_for() {
    assert_eq!(links("see [a](b.md#c) and [d](e f)"), ["b.md#c"]);
    assert_eq!(
        slug(" `compare --out DIR`: the files"),
        "compare---out-dir-the-files"
    );
    assert_eq!(prose("a\n```\n[x](y)\n```\nb\n"), "a\nb\n");
}
