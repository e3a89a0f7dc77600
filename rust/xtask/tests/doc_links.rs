//! The relative links of the user-facing Markdown resolve: `README.md` and every `docs/**/*.md`.
//!
//! A link or image (`[text](target)`, `![alt](target)`) whose target is not a web or mail address
//! must name a file or folder that exists, relative to the page that holds it; a `#anchor`, alone
//! or after a `.md` file, must name a heading of that page as GitHub slugs it. Code blocks and code
//! spans are not read: what they hold is code, not links. The checker is tested on samples broken
//! on purpose, so that a pass on the real pages means something.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A link the checker found in a page: where it is and what it points at.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    line: usize,
    target: String,
}

/// The workspace root (the parent of `rust/xtask`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}

/// Every line of `text` outside fenced code blocks, with its 1-based number and its code spans
/// blanked out. (Indented code blocks are read as prose: none of these pages holds a link in one.)
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fence: Option<String> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
        if marker.len() >= 3 && marker.chars().all(|c| c == marker.chars().next().unwrap_or('`')) {
            match &fence {
                None => fence = Some(marker),
                Some(open) if marker.starts_with(open.as_str()) && trimmed.trim_end() == marker => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        lines.push((index + 1, without_code_spans(line)));
    }
    lines
}

/// `line` with every code span (`` `…` ``, any run of backticks) replaced by spaces.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        let closing = (i + run..chars.len()).find(|&j| chars[j..].iter().take_while(|c| **c == '`').count() == run && (j == 0 || chars[j - 1] != '`'));
        match closing {
            Some(j) => {
                out.extend(std::iter::repeat_n(' ', j + run - i));
                i = j + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The links and images of a page: each `](` that closes a bracketed text, up to the matching `)`
/// (targets may hold balanced parentheses); a title after the target (`"…"`) is dropped.
fn links(text: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (line, prose) in prose_lines(text) {
        let chars: Vec<char> = prose.chars().collect();
        let mut i = 0;
        while i + 1 < chars.len() {
            if chars[i] == ']' && chars[i + 1] == '(' && chars[..i].contains(&'[') {
                let mut depth = 0;
                let mut end = None;
                for (j, c) in chars.iter().enumerate().skip(i + 1) {
                    match c {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(j);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(end) = end {
                    let inside: String = chars[i + 2..end].iter().collect();
                    let target = inside.trim().split_whitespace().next().unwrap_or("").trim_matches(['<', '>']).to_string();
                    found.push(Link { line, target });
                    i = end;
                }
            }
            i += 1;
        }
    }
    found
}

/// A heading's anchor as GitHub makes it: lower case; letters, digits, `_`, `-` and spaces kept,
/// everything else dropped (punctuation, `×`, `–`, the backticks of code); spaces become `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (ATX `#` headings outside code), with GitHub's `-1`, `-2` …
/// for repeated ones.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence || line.starts_with("    ") {
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !trimmed[hashes..].starts_with(' ') {
            continue;
        }
        let text = trimmed[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(text);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Whether a target is checked at all: web and mail addresses are not.
fn is_external(target: &str) -> bool {
    let lower = target.to_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// The broken links of one page at `path` holding `text`, each as `path:line: target: why`;
/// `read` gives another page's text (`None` when it does not exist) and `exists` whether a path
/// exists, so that the check runs on samples in memory as on the disk.
fn problems(path: &Path, text: &str, read: &dyn Fn(&Path) -> Option<String>, exists: &dyn Fn(&Path) -> bool) -> (usize, Vec<String>) {
    let mut broken = Vec::new();
    let mut checked = 0;
    let folder = path.parent().unwrap_or(Path::new(""));
    for link in links(text) {
        if is_external(&link.target) {
            continue;
        }
        checked += 1;
        let (file, anchor) = match link.target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (link.target.as_str(), None),
        };
        let where_ = format!("{}:{}: {}", path.display(), link.line, link.target);
        if file.is_empty() && anchor.is_none() {
            broken.push(format!("{where_}: an empty target"));
            continue;
        }
        let target_path = if file.is_empty() { path.to_path_buf() } else { normalise(&folder.join(file)) };
        if !file.is_empty() && !exists(&target_path) {
            broken.push(format!("{where_}: no file {}", target_path.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if !target_path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let target_text = if file.is_empty() { Some(text.to_string()) } else { read(&target_path) };
        match target_text {
            Some(target_text) if anchors(&target_text).contains(&anchor.to_lowercase()) => {}
            Some(_) => broken.push(format!("{where_}: no heading with the anchor #{anchor} in {}", target_path.display())),
            None => broken.push(format!("{where_}: cannot read {}", target_path.display())),
        }
    }
    (checked, broken)
}

/// `path` with `.` and `..` components folded, without touching the disk.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `README.md` and every Markdown file under `docs/`, relative to the root, sorted.
fn user_pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(root).expect("under the root").to_path_buf());
            }
        }
    }
    let mut pages = vec![PathBuf::from("README.md")];
    walk(&root.join("docs"), root, &mut pages);
    pages.sort();
    pages
}

/// Checks pages held in memory: `pages` are (path, text); a path exists when a page or one of
/// `other_files` has it.
fn check_samples(pages: &[(&str, &str)], other_files: &[&str]) -> (usize, Vec<String>) {
    let read = |p: &Path| pages.iter().find(|(path, _)| Path::new(path) == p).map(|(_, text)| text.to_string());
    let exists = |p: &Path| pages.iter().any(|(path, _)| Path::new(path) == p) || other_files.iter().any(|f| Path::new(f) == p || Path::new(f).starts_with(p));
    let mut checked = 0;
    let mut broken = Vec::new();
    for (path, text) in pages {
        let (n, mut found) = problems(Path::new(path), text, &read, &exists);
        checked += n;
        broken.append(&mut found);
    }
    (checked, broken)
}

#[test]
fn github_slugs_drop_punctuation_and_number_repeats() {
    let cases = [
        ("Bodies (`PipeWaterBody`, `Simulation::couple_bodies`)", "bodies-pipewaterbody-simulationcouple_bodies"),
        ("This machine: 2 shared AMD EPYC CPUs, no GPU", "this-machine-2-shared-amd-epyc-cpus-no-gpu"),
        ("The release workflow's static check", "the-release-workflows-static-check"),
        ("Mesa llvmpipe (software Vulkan, LLVM 15.0.6, 256-bit), this machine's 2 shared CPUs", "mesa-llvmpipe-software-vulkan-llvm-1506-256-bit-this-machines-2-shared-cpus"),
    ];
    for (heading, expected) in cases {
        println!("{heading:?} -> {:?}", slug(heading));
        assert_eq!(slug(heading), expected);
    }
    let repeated = anchors("# Top\n## Same\n```\n## not a heading\n```\n## Same\n### Same\n");
    let mut sorted: Vec<_> = repeated.iter().cloned().collect();
    sorted.sort();
    println!("anchors: {sorted:?}");
    assert_eq!(sorted, ["same", "same-1", "same-2", "top"]);
}

#[test]
fn the_checker_reports_every_kind_of_broken_link_in_a_sample() {
    let readme = "# Sample\n\n## Install\n\nSee [the model](docs/MODEL.md), [its step](docs/MODEL.md#one-step) and [Install](#install).\n\
        ![a picture](docs/picture.png) and [the web](https://example.com/missing) and [mail](mailto:a@b.c).\n\
        Broken: [no page](docs/GONE.md), [no heading](docs/MODEL.md#two-steps), [no local heading](#uninstall),\n\
        ![no picture](docs/missing.png), [empty]().\n\
        `[in code](docs/NOT_CHECKED.md)` and\n```\n[in a block](docs/NOT_CHECKED.md)\n```\n";
    let model = "# The model\n\n## One step\n\nBack to the [README](../README.md#install); [up and missing](../GONE.md).\n";
    let (checked, broken) = check_samples(&[("README.md", readme), ("docs/MODEL.md", model)], &["docs/picture.png"]);
    println!("checked {checked} links; broken:\n{}", broken.join("\n"));
    let expected = [
        "README.md:7: docs/GONE.md: no file docs/GONE.md",
        "README.md:7: docs/MODEL.md#two-steps: no heading with the anchor #two-steps in docs/MODEL.md",
        "README.md:7: #uninstall: no heading with the anchor #uninstall in README.md",
        "README.md:8: docs/missing.png: no file docs/missing.png",
        "README.md:8: : an empty target",
        "docs/MODEL.md:5: ../GONE.md: no file GONE.md",
    ];
    assert_eq!(broken, expected, "each planted mistake is reported, and nothing else");
    assert_eq!(checked, 11, "the links outside code, less the two external ones");
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = root();
    let pages = user_pages(&root);
    let read = |p: &Path| std::fs::read_to_string(root.join(p)).ok();
    let exists = |p: &Path| root.join(p).exists();
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let (n, mut found) = problems(page, &text, &read, &exists);
        println!("{}: {n} relative links", page.display());
        checked += n;
        broken.append(&mut found);
    }
    println!("checked {checked} relative links in {} pages; {} broken", pages.len(), broken.len());
    assert!(pages.len() > 1 && checked > 0, "the pages and their links were found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
