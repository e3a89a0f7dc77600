//! `addons/pipe_water/pipe_water.gdextension` as Godot reads it: which library each platform,
//! profile and architecture loads, and which icon each class shows.
//!
//! `cargo xtask build` asks [`GdExtension::library_for`] where to install what it built, with
//! the rule Godot applies when it loads the extension (the entry whose feature tags all hold and
//! that has the most of them), so a build lands where Godot looks. [`problems`], run by the
//! tests here and before every package, holds the file to Godot's feature-tag grammar, to one
//! library per shipped platform and profile, and to an icon for every class the Rust sources
//! register; a test holds `compatibility_minimum` to the API the library is built against.

use crate::util::root;
use std::path::{Path, PathBuf};

/// The extension's configuration file, relative to the repository root.
pub const PATH: &str = "addons/pipe_water/pipe_water.gdextension";
/// `res://` paths of the addon start with this; the repository holds the addon at the same
/// relative path as a Godot project does.
pub const ADDON_RES: &str = "res://addons/pipe_water/";
/// Godot's platform feature tags (`OS::get_identifier`).
pub const PLATFORMS: [&str; 6] = ["linux", "windows", "macos", "android", "ios", "web"];
/// The build profiles as feature tags: `debug` holds in the editor and debug exports, `release`
/// in release exports.
pub const PROFILES: [&str; 2] = ["debug", "release"];
/// Godot's architecture feature tags, as its exporters name architectures.
pub const ARCHITECTURES: [&str; 8] = ["x86_64", "x86_32", "arm64", "arm32", "rv64", "ppc64", "wasm32", "wasm64"];
/// Platforms whose one library per profile serves every architecture (a universal binary).
pub const UNIVERSAL_PLATFORMS: [&str; 1] = ["macos"];
/// What the release workflow builds: (platform, architecture) pairs, each in both profiles.
pub const SHIPPED: [(&str, &str); 5] = [("linux", "x86_64"), ("linux", "arm64"), ("windows", "x86_64"), ("macos", "x86_64"), ("macos", "arm64")];

/// A parsed `.gdextension` (Godot's `ConfigFile` text: `[section]`, `key = value`, `;` and `#`
/// comments), keys in file order.
#[derive(Debug, Clone, Default)]
pub struct GdExtension {
    sections: Vec<(String, Vec<(String, String)>)>,
}

impl GdExtension {
    /// Reads [`PATH`].
    pub fn read() -> Result<Self, String> {
        let path = root().join(PATH);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the subset of `ConfigFile` syntax a `.gdextension` uses. Values keep their quotes
    /// (see [`unquote`]).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parsed = GdExtension::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                parsed.sections.push((name.trim().to_string(), Vec::new()));
                continue;
            }
            let (key, value) = line.split_once('=').ok_or_else(|| format!("line {}: expected `key = value`, got {line:?}", number + 1))?;
            let section = parsed.sections.last_mut().ok_or_else(|| format!("line {}: a key before any [section]", number + 1))?;
            section.1.push((key.trim().to_string(), value.trim().to_string()));
        }
        Ok(parsed)
    }

    /// The `(key, raw value)` pairs of a section, empty when it is absent.
    pub fn section(&self, name: &str) -> &[(String, String)] {
        self.sections.iter().find(|(n, _)| n == name).map(|(_, keys)| keys.as_slice()).unwrap_or(&[])
    }

    /// A key's value without its quotes.
    pub fn value(&self, section: &str, key: &str) -> Option<String> {
        self.section(section).iter().find(|(k, _)| k == key).map(|(_, v)| unquote(v))
    }

    /// The library Godot loads where exactly `features` hold: among the `[libraries]` keys whose
    /// dot-separated tags are all in `features`, the first with the most tags (Godot's
    /// `GDExtension::find_extension_library`).
    pub fn library_for(&self, features: &[&str]) -> Option<String> {
        let mut best: Option<(usize, &str)> = None;
        for (key, value) in self.section("libraries") {
            let tags: Vec<&str> = key.split('.').map(str::trim).collect();
            if tags.iter().all(|t| features.contains(t)) && best.is_none_or(|(count, _)| tags.len() > count) {
                best = Some((tags.len(), value));
            }
        }
        best.map(|(_, value)| unquote(value))
    }
}

/// A `ConfigFile` value without its double quotes (and with `\"` and `\\` unescaped); other
/// values (numbers, booleans) as written.
pub fn unquote(raw: &str) -> String {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => raw.to_string(),
    }
}

/// The repository path of an addon `res://` path (`res://addons/pipe_water/x` →
/// `<root>/addons/pipe_water/x`); `None` for paths outside the addon.
pub fn repository_path(res_path: &str) -> Option<PathBuf> {
    res_path.strip_prefix(ADDON_RES).map(|rest| root().join("addons/pipe_water").join(rest))
}

/// What is wrong with one `[libraries]` key under the grammar `<platform>.<debug|release>` with
/// `.<architecture>` after it except on [`UNIVERSAL_PLATFORMS`]; `None` when it follows it.
pub fn library_key_problem(key: &str) -> Option<String> {
    let tags: Vec<&str> = key.split('.').collect();
    let platform = tags[0];
    if !PLATFORMS.contains(&platform) {
        return Some(format!("`{key}`: `{platform}` is not one of Godot's platform tags {PLATFORMS:?}"));
    }
    match tags.get(1) {
        Some(profile) if PROFILES.contains(profile) => {}
        other => return Some(format!("`{key}`: the second tag must be one of {PROFILES:?}, not {other:?}")),
    }
    let universal = UNIVERSAL_PLATFORMS.contains(&platform);
    match (tags.get(2), tags.len(), universal) {
        (None, 2, true) => None,
        (Some(_), _, true) => Some(format!("`{key}`: {platform} ships one universal library per profile; name no architecture")),
        (Some(arch), 3, false) if ARCHITECTURES.contains(arch) => None,
        (Some(arch), 3, false) => Some(format!("`{key}`: `{arch}` is not one of Godot's architecture tags {ARCHITECTURES:?}")),
        _ => Some(format!("`{key}`: expected `{platform}.<debug|release>.<architecture>`")),
    }
}

/// Every problem of the `[libraries]` section: keys off the grammar, shipped platforms and
/// profiles without a library or sharing one, libraries outside `bin/` or with another
/// platform's file type, and entries for builds that are not shipped.
pub fn libraries_problems(extension: &GdExtension) -> Vec<String> {
    let mut problems: Vec<String> = extension.section("libraries").iter().filter_map(|(key, _)| library_key_problem(key)).collect();
    let mut resolved: Vec<(String, String)> = Vec::new();
    for (platform, arch) in SHIPPED {
        for profile in PROFILES {
            let build = format!("{platform}.{profile}.{arch}");
            let Some(path) = extension.library_for(&[platform, profile, arch]) else {
                problems.push(format!("{build} (shipped) finds no library"));
                continue;
            };
            let file = path.strip_prefix(ADDON_RES).and_then(|p| p.strip_prefix("bin/")).unwrap_or("");
            let expected_type = match platform {
                "windows" => ".dll",
                "macos" => ".framework",
                _ => ".so",
            };
            if file.is_empty() || file.contains('/') {
                problems.push(format!("{build} loads {path}, which is not a file of {ADDON_RES}bin/"));
            } else if !file.ends_with(expected_type) {
                problems.push(format!("{build} loads {path}, not a {expected_type}"));
            }
            // Only a universal platform's architectures share a file, and only within a profile.
            let shares = |other: &str| {
                let same_profile = other.split('.').nth(1) == Some(profile);
                !(UNIVERSAL_PLATFORMS.contains(&platform) && other.starts_with(&format!("{platform}.")) && same_profile)
            };
            if let Some((other, _)) = resolved.iter().find(|(b, p)| p == &path && shares(b)) {
                problems.push(format!("{build} and {other} load the same file {path}: each platform, profile and architecture needs its own"));
            }
            resolved.push((build, path));
        }
    }
    for (key, value) in extension.section("libraries") {
        if !resolved.iter().any(|(_, path)| path == &unquote(value)) {
            problems.push(format!("`{key}` names {value}, which no shipped build loads"));
        }
    }
    problems
}

/// The Godot names of the classes the Rust sources register: each struct under
/// `#[derive(GodotClass)]`, or its `#[class(rename = …)]`.
pub fn rust_classes(sources: &[(PathBuf, String)]) -> Vec<String> {
    let mut classes = Vec::new();
    for (_, text) in sources {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if !(line.starts_with("#[derive(") && line.contains("GodotClass")) {
                continue;
            }
            let mut rename = None;
            for after in &lines[i + 1..] {
                if after.starts_with("#[class(") {
                    rename = after.split("rename").nth(1).and_then(|r| r.trim_start().strip_prefix('=')).map(|r| {
                        r.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>()
                    });
                }
                if let Some(name) = after.split_once("struct ").map(|(_, rest)| rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>()) {
                    classes.push(rename.unwrap_or(name));
                    break;
                }
            }
        }
    }
    classes
}

/// The `.rs` files under `dir`, with their text.
pub fn rust_sources(dir: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            found.extend(rust_sources(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
            found.push((path, text));
        }
    }
    found.sort();
    Ok(found)
}

/// Every problem of the `[icons]` section against `classes`: a class without an icon, an icon
/// for no class, an icon file that is missing or is not a 16×16 SVG.
pub fn icons_problems(extension: &GdExtension, classes: &[String]) -> Vec<String> {
    let icons = extension.section("icons");
    let mut problems = Vec::new();
    for class in classes {
        if !icons.iter().any(|(k, _)| k == class) {
            problems.push(format!("{class} is registered by the Rust sources but has no [icons] entry"));
        }
    }
    for (class, value) in icons {
        if !classes.contains(class) {
            problems.push(format!("[icons] names {class}, which the Rust sources do not register"));
        }
        let path = unquote(value);
        let Some(file) = repository_path(&path) else {
            problems.push(format!("{class}'s icon {path} is not inside {ADDON_RES}"));
            continue;
        };
        match std::fs::read_to_string(&file) {
            Err(e) => problems.push(format!("{class}'s icon {path}: {e}")),
            Ok(svg) => {
                let head = svg.split_once('>').map(|(h, _)| h).unwrap_or("");
                if !(file.extension().is_some_and(|e| e == "svg") && head.contains("width=\"16\"") && head.contains("height=\"16\"")) {
                    problems.push(format!("{class}'s icon {path} is not a 16×16 SVG (root element {head:?})"));
                }
            }
        }
    }
    problems
}

/// Every problem of the addon's `.gdextension`: [`libraries_problems`], and [`icons_problems`]
/// against the classes of `rust/pipewater-godot/src`.
pub fn problems() -> Result<Vec<String>, String> {
    let extension = GdExtension::read()?;
    let classes = rust_classes(&rust_sources(&root().join("rust/pipewater-godot/src"))?);
    let mut problems = libraries_problems(&extension);
    problems.extend(icons_problems(&extension, &classes));
    Ok(problems)
}

/// The extension, as `.godot/extension_list.cfg` names it.
pub const EXTENSION_RES_PATH: &str = "res://addons/pipe_water/pipe_water.gdextension";

/// Adds the addon to `<project>/.godot/extension_list.cfg`, as the editor does when it first
/// finds the extension. A headless editor session that finds the extension itself hits engine
/// problems: Godot 4.3 compiles the scripts that name `PipeWater` before the class exists
/// (`GDScript bug: Native class "PipeWater" not found`), Godot 4.6 crashes with signal 11 when
/// it quits. With the list in place the extension loads at start, as in every later session.
pub fn seed_extension_list(project: &Path) -> Result<(), String> {
    let dir = project.join(".godot");
    let list = dir.join("extension_list.cfg");
    let existing = std::fs::read_to_string(&list).unwrap_or_default();
    if existing.lines().any(|l| l.trim() == EXTENSION_RES_PATH) {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(EXTENSION_RES_PATH);
    text.push('\n');
    std::fs::write(&list, text).map_err(|e| format!("writing {}: {e}", list.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped_file() -> GdExtension {
        GdExtension::read().expect("the addon's .gdextension parses")
    }

    #[test]
    fn the_parser_reads_sections_keys_quotes_and_skips_comments() {
        let text = "; comment\n[configuration]\nentry_symbol = \"gdext_rust_init\"\n# another\nreloadable = true\n\n[libraries]\nlinux.debug.x86_64 = \"res://a \\\"b\\\".so\"\n";
        let parsed = GdExtension::parse(text).expect("parses");
        println!("{parsed:?}");
        assert_eq!(parsed.value("configuration", "entry_symbol").as_deref(), Some("gdext_rust_init"));
        assert_eq!(parsed.value("configuration", "reloadable").as_deref(), Some("true"));
        assert_eq!(parsed.value("libraries", "linux.debug.x86_64").as_deref(), Some("res://a \"b\".so"));
        assert!(GdExtension::parse("key = 1\n").is_err(), "a key before any section is refused");
    }

    #[test]
    fn every_library_key_follows_godots_feature_tag_grammar() {
        let extension = shipped_file();
        for (key, value) in extension.section("libraries") {
            println!("{key} = {value}: {:?}", library_key_problem(key));
        }
        assert!(!extension.section("libraries").is_empty());
        assert!(extension.section("libraries").iter().all(|(k, _)| library_key_problem(k).is_none()));
        let bad = ["linux.x86_64.debug", "macos.release.arm64", "windows.debug.amd64", "osx.debug", "linux.debug", "linux.template_debug.x86_64", "linux.debug.x86_64.extra"];
        for key in bad {
            let problem = library_key_problem(key);
            println!("{key}: {problem:?}");
            assert!(problem.is_some(), "{key} is off the grammar");
        }
    }

    #[test]
    fn every_shipped_build_resolves_to_its_own_library_in_bin() {
        let extension = shipped_file();
        for (platform, arch) in SHIPPED {
            for profile in PROFILES {
                println!("{platform}.{profile}.{arch} -> {:?}", extension.library_for(&[platform, profile, arch]));
            }
        }
        let problems = libraries_problems(&extension);
        println!("problems: {problems:#?}");
        assert!(problems.is_empty());
        // Each kind of mistake is caught.
        let broken = [
            ("a profile sharing the other's file", "macos.debug = \"res://addons/pipe_water/bin/m.framework\"\nmacos.release = \"res://addons/pipe_water/bin/m.framework\"\n"),
            ("a missing platform", "macos.debug = \"res://addons/pipe_water/bin/d.framework\"\n"),
            ("a dylib instead of a framework", "macos.debug = \"res://addons/pipe_water/bin/d.dylib\"\nmacos.release = \"res://addons/pipe_water/bin/r.framework\"\n"),
        ];
        for (what, macos_lines) in broken {
            let text = extension_text_with_macos(&extension, macos_lines);
            let problems = libraries_problems(&GdExtension::parse(&text).expect("parses"));
            println!("{what}: {problems:?}");
            assert!(!problems.is_empty(), "{what} is reported");
        }
    }

    /// The shipped file's `[libraries]` with its macOS lines replaced by `macos_lines`.
    fn extension_text_with_macos(extension: &GdExtension, macos_lines: &str) -> String {
        let mut text = String::from("[libraries]\n");
        for (key, value) in extension.section("libraries").iter().filter(|(k, _)| !k.starts_with("macos")) {
            text.push_str(&format!("{key} = {value}\n"));
        }
        text + macos_lines
    }

    #[test]
    fn the_linux_entries_are_where_cargo_xtask_build_installs() {
        let extension = shipped_file();
        for (triple, arch) in [("x86_64-unknown-linux-gnu", "x86_64"), ("aarch64-unknown-linux-gnu", "arm64")] {
            let target = crate::build::Target::from_triple(triple).expect("a known triple");
            for profile in [crate::build::Profile::Debug, crate::build::Profile::Release] {
                let installed = crate::build::install_path(&target, profile).expect("build finds an entry");
                let key = format!("linux.{}.{arch}", profile.tag());
                let entry = extension.value("libraries", &key).expect("the entry exists");
                println!("{triple} {profile:?}: build installs {}, {key} = {entry}", installed.display());
                assert_eq!(Some(installed), repository_path(&entry));
                assert_eq!(entry, format!("{ADDON_RES}bin/libpipewater_godot.linux.{}.{arch}.so", profile.tag()));
            }
        }
    }

    #[test]
    fn compatibility_minimum_is_the_godot_api_the_library_is_built_against() {
        let extension = shipped_file();
        let raw = extension.section("configuration").iter().find(|(k, _)| k == "compatibility_minimum").map(|(_, v)| v.clone());
        let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("the workspace manifest");
        let api = manifest.split("\"api-").nth(1).and_then(|rest| rest.split('"').next()).map(|v| v.replace('-', "."));
        println!("compatibility_minimum = {raw:?}; the godot crate's feature api-{api:?}");
        assert_eq!(raw.as_deref(), Some("\"4.3\""), "a string, as Godot documents it (a float would read 4.10 as 4.1)");
        assert_eq!(api.as_deref(), Some("4.3"));
        assert_eq!(extension.value("configuration", "entry_symbol").as_deref(), Some("gdext_rust_init"));
    }

    #[test]
    fn every_class_the_rust_sources_register_has_a_16px_svg_icon() {
        let sources = rust_sources(&root().join("rust/pipewater-godot/src")).expect("the extension's sources");
        let classes = rust_classes(&sources);
        let extension = shipped_file();
        println!("classes in the Rust sources: {classes:?}");
        println!("[icons]: {:?}", extension.section("icons"));
        assert!(classes.iter().any(|c| c == "PipeWater"), "the scanner finds the node");
        let problems = icons_problems(&extension, &classes);
        println!("problems: {problems:#?}");
        assert!(problems.is_empty());
    }

    #[test]
    fn a_class_added_without_an_icon_fails_the_icon_check() {
        let source = "\
/// A weir.
#[derive(GodotClass)]
#[class(init, base = Node3D)]
pub struct PipeWaterWeir {
    base: Base<Node3D>,
}

#[derive(GodotClass, Debug)]
#[class(init, rename = PipeWaterGauge, base = Node3D)]
pub(crate) struct Gauge;

#[derive(Debug)]
struct NotAClass;
";
        let classes = rust_classes(&[(PathBuf::from("source.rs"), source.to_string())]);
        println!("classes: {classes:?}");
        assert_eq!(classes, ["PipeWaterWeir", "PipeWaterGauge"]);
        let extension = shipped_file();
        let mut all = rust_classes(&rust_sources(&root().join("rust/pipewater-godot/src")).expect("sources"));
        all.extend(classes);
        let problems = icons_problems(&extension, &all);
        println!("problems: {problems:#?}");
        assert!(problems.iter().any(|p| p.starts_with("PipeWaterWeir ")));
        assert!(problems.iter().any(|p| p.starts_with("PipeWaterGauge ")));
    }
}
