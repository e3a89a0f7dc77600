//! `cargo xtask package [--prebuilt]`: the release zip, `pipe_water-<version>.zip`.
//!
//! The zip holds `addons/pipe_water/` only, as users unzip it into their project: the addon's
//! committed files (`git ls-files`, so nothing untracked or ignored slips in; hidden files such as
//! `bin/.gitkeep` left out), the libraries the `.gdextension` names, the workspace's `LICENSE`
//! copied into the folder, and `plugin.cfg` with the workspace version written into it (the
//! workspace `Cargo.toml` is the one place the version is set). Entries are sorted and dated
//! 1980-01-01, so the same inputs give the same zip.
//!
//! - Without options it builds this machine's debug and release libraries, stripped, and writes
//!   `target/package/`. The `.gdextension` still lists every platform; the zip has this one's.
//! - `--prebuilt` builds nothing and requires every library the `.gdextension` names to be in
//!   `addons/pipe_water/bin/` already: the release workflow's last job, after it gathered the
//!   platforms' builds there.
//!
//! Every zip written is read back and checked ([`verify`]): addon files only, no test or demo
//! files, the licence, README, plugin version, icons and libraries present, a `.uid` beside every
//! script and shader (Godot 4.4+ writes one into the user's project otherwise), Linux libraries
//! without a symbol table. The test command builds a zip from the debug library only
//! ([`test_package`]); the release library costs a release build the release workflow makes anyway.

use crate::build::{build_and_install_with, install_path, target_dir, BuildOptions, Profile, Target};
use crate::gdextension::{repository_path, unquote, GdExtension};
use crate::util::root;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace version (`[workspace.package] version` in `Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The addon's folder inside the zip and the repository.
pub const ADDON: &str = "addons/pipe_water";
/// Files every zip must hold, relative to [`ADDON`].
pub const REQUIRED: [&str; 4] = ["LICENSE", "README.md", "plugin.cfg", "pipe_water.gdextension"];
/// Resource types Godot 4.4+ gives a `.uid` file beside them.
const UID_TYPES: [&str; 3] = ["gd", "gdshader", "gdshaderinc"];

/// The zip's file name.
pub fn zip_name() -> String {
    format!("pipe_water-{VERSION}.zip")
}

/// Which libraries go into a zip.
#[derive(Debug, Clone)]
pub enum Libraries {
    /// This machine's, for these profiles (they must have been built).
    Host(Vec<Profile>),
    /// Every library the `.gdextension` names (all must be in `bin/`).
    AllNamed,
}

/// One file of the zip.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Path inside the zip, with `/` separators.
    pub name: String,
    /// Contents.
    pub data: Vec<u8>,
    /// Whether it is a library binary (written with mode 0755).
    pub binary: bool,
}

/// What a checked zip holds.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every file (not folder) with its size, in zip order.
    pub files: Vec<(String, u64)>,
}

impl Report {
    /// Total size of the files (bytes).
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, size)| size).sum()
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let libraries = match args {
        [] => {
            for profile in [Profile::Debug, Profile::Release] {
                build_and_install_with(&BuildOptions { profile, strip: true, targets: Vec::new() })?;
            }
            Libraries::Host(vec![Profile::Debug, Profile::Release])
        }
        [prebuilt] if prebuilt == "--prebuilt" => Libraries::AllNamed,
        _ => return Err(format!("unknown options {args:?}: usage `cargo xtask package [--prebuilt]`")),
    };
    let zip = target_dir().join("package").join(zip_name());
    let report = write_and_verify(&zip, &libraries)?;
    for (name, size) in &report.files {
        println!("{size:>12}  {name}");
    }
    let zipped = std::fs::metadata(&zip).map(|m| m.len()).unwrap_or(0);
    println!("wrote {}: {} files, {:.1} MiB unpacked, {:.1} MiB zipped", zip.display(), report.files.len(), mib(report.bytes()), mib(zipped));
    if let Libraries::Host(_) = libraries {
        println!("(this machine's libraries only; the release workflow gathers every platform's and runs `cargo xtask package --prebuilt`)");
    }
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Checks the `.gdextension` ([`crate::gdextension`]), collects the entries, writes the zip to
/// `path` and checks it.
pub fn write_and_verify(path: &Path, libraries: &Libraries) -> Result<Report, String> {
    let problems = crate::gdextension::problems()?;
    if !problems.is_empty() {
        return Err(format!("{} is not fit to ship:\n  {}", crate::gdextension::PATH, problems.join("\n  ")));
    }
    let library_paths = library_paths(libraries)?;
    let entries = collect(&library_paths)?;
    write_zip(path, &entries)?;
    let expected: Vec<String> = library_paths.iter().map(|p| zip_name_of(p)).collect::<Result<_, _>>()?;
    verify(path, &expected)
}

/// The libraries (files, or framework folders) for `libraries`, as repository paths; an error
/// names the first that is missing.
fn library_paths(libraries: &Libraries) -> Result<Vec<PathBuf>, String> {
    let paths: Vec<PathBuf> = match libraries {
        Libraries::Host(profiles) => {
            let host = Target::host()?;
            profiles.iter().map(|p| install_path(&host, *p)).collect::<Result<_, _>>()?
        }
        Libraries::AllNamed => {
            let extension = GdExtension::read()?;
            let mut paths: Vec<PathBuf> = Vec::new();
            for (key, value) in extension.section("libraries") {
                let path = repository_path(&unquote(value)).ok_or_else(|| format!("[libraries] {key} = {value} is not inside the addon"))?;
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            paths
        }
    };
    let missing: Vec<String> = paths.iter().filter(|p| !p.exists()).map(|p| p.display().to_string()).collect();
    if !missing.is_empty() {
        return Err(format!("libraries missing (build them with `cargo xtask build --strip [--release] --target <triple>`): {missing:?}"));
    }
    Ok(paths)
}

/// A repository path as its name inside the zip (relative to the root, `/`-separated).
fn zip_name_of(path: &Path) -> Result<String, String> {
    let relative = path.strip_prefix(root()).map_err(|_| format!("{} is outside the repository", path.display()))?;
    Ok(relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"))
}

/// The addon's committed files (names relative to the repository root), without hidden files and
/// without `bin/` (its libraries are added by name).
pub fn committed_addon_files() -> Result<Vec<String>, String> {
    let output = Command::new("git")
        .args(["ls-files", "-z", "--", ADDON])
        .current_dir(root())
        .output()
        .map_err(|e| format!("running git ls-files (the package takes the addon's committed files): {e}"))?;
    if !output.status.success() {
        return Err(format!("git ls-files {ADDON} failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let bin = format!("{ADDON}/bin/");
    let mut files: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .split('\0')
        .filter(|f| !f.is_empty() && !f.starts_with(&bin))
        .filter(|f| !f.split('/').any(|part| part.starts_with('.')))
        .map(str::to_string)
        .collect();
    files.sort();
    Ok(files)
}

/// Every entry of the zip: the committed addon files (with the version written into
/// `plugin.cfg`), the licence, and the files of `libraries`.
fn collect(libraries: &[PathBuf]) -> Result<Vec<Entry>, String> {
    let root = root();
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
    let mut entries = Vec::new();
    for name in committed_addon_files()? {
        let mut data = read(&root.join(&name))?;
        if name == format!("{ADDON}/plugin.cfg") {
            data = with_version(&String::from_utf8_lossy(&data), VERSION)?.into_bytes();
        }
        entries.push(Entry { name, data, binary: false });
    }
    if entries.iter().any(|e| e.name == format!("{ADDON}/LICENSE")) {
        return Err(format!("{ADDON}/LICENSE is committed: the zip takes the repository's LICENSE, keep one copy"));
    }
    entries.push(Entry { name: format!("{ADDON}/LICENSE"), data: read(&root.join("LICENSE"))?, binary: false });
    for library in libraries {
        let mut files = Vec::new();
        files_under(library, &mut files)?;
        for file in files {
            let binary = !file.extension().is_some_and(|e| e == "plist");
            entries.push(Entry { name: zip_name_of(&file)?, data: read(&file)?, binary });
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// `path` itself when it is a file, else every file under it.
fn files_under(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    if path.is_file() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(path).map_err(|e| format!("reading {}: {e}", path.display()))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    children.sort();
    for child in children {
        files_under(&child, files)?;
    }
    Ok(())
}

/// `plugin.cfg` text with its `version="…"` line set to `version`.
pub fn with_version(plugin_cfg: &str, version: &str) -> Result<String, String> {
    let mut found = false;
    let lines: Vec<String> = plugin_cfg
        .lines()
        .map(|line| match line.split_once('=') {
            Some((key, _)) if key.trim() == "version" => {
                found = true;
                format!("version=\"{version}\"")
            }
            _ => line.to_string(),
        })
        .collect();
    if !found {
        return Err("plugin.cfg has no version line".into());
    }
    Ok(lines.join("\n") + "\n")
}

/// Writes `entries` (sorted) into a zip at `path`, with their folders, all dated 1980-01-01.
pub fn write_zip(path: &Path, entries: &[Entry]) -> Result<(), String> {
    use zip::write::SimpleFileOptions;
    use zip::{CompressionMethod, DateTime};
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let partial = path.with_extension("zip.partial");
    let file = std::fs::File::create(&partial).map_err(|e| format!("creating {}: {e}", partial.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated).last_modified_time(DateTime::DEFAULT);
    let mut folders: Vec<String> = Vec::new();
    let fail = |e: zip::result::ZipError| format!("writing {}: {e}", partial.display());
    for entry in entries {
        let parts: Vec<&str> = entry.name.split('/').collect();
        for depth in 1..parts.len() {
            let folder = format!("{}/", parts[..depth].join("/"));
            if !folders.contains(&folder) {
                zip.add_directory(folder.as_str(), options.unix_permissions(0o755)).map_err(fail)?;
                folders.push(folder);
            }
        }
        zip.start_file(entry.name.as_str(), options.unix_permissions(if entry.binary { 0o755 } else { 0o644 })).map_err(fail)?;
        zip.write_all(&entry.data).map_err(|e| format!("writing {}: {e}", partial.display()))?;
    }
    zip.finish().map_err(fail)?;
    std::fs::rename(&partial, path).map_err(|e| format!("renaming {} to {}: {e}", partial.display(), path.display()))
}

/// Reads the zip back and checks it (see the module's documentation); `libraries` are the
/// library files or framework folders (zip names) it must hold.
pub fn verify(path: &Path, libraries: &[String]) -> Result<Report, String> {
    let files = read_zip(path)?;
    let mut problems = Vec::new();
    let prefix = format!("{ADDON}/");
    for name in files.keys() {
        if !name.starts_with(&prefix) {
            problems.push(format!("{name} is outside {prefix}"));
        }
        let parts: Vec<&str> = name.split('/').collect();
        let file = parts.last().copied().unwrap_or("");
        if parts.iter().any(|p| p.starts_with('.')) || file.ends_with(".import") {
            problems.push(format!("{name} is a hidden file or an import record"));
        }
        if parts.iter().any(|p| matches!(*p, "test" | "tests" | "demo")) || file.starts_with("test_") {
            problems.push(format!("{name} is a test or demo file"));
        }
        if UID_TYPES.iter().any(|t| file.ends_with(&format!(".{t}"))) && !files.contains_key(&format!("{name}.uid")) {
            problems.push(format!("{name} has no .uid beside it: Godot 4.4+ would write one into the user's project"));
        }
    }
    for required in REQUIRED {
        if !files.contains_key(&format!("{prefix}{required}")) {
            problems.push(format!("{prefix}{required} is missing"));
        }
    }
    if let Some(plugin) = files.get(&format!("{prefix}plugin.cfg")) {
        let version = GdExtension::parse(&String::from_utf8_lossy(plugin)).ok().and_then(|p| p.value("plugin", "version"));
        if version.as_deref() != Some(VERSION) {
            problems.push(format!("plugin.cfg says version {version:?}, the workspace {VERSION}"));
        }
    }
    if let Some(licence) = files.get(&format!("{prefix}LICENSE")) {
        if std::fs::read(root().join("LICENSE")).ok().as_ref() != Some(licence) {
            problems.push("the zip's LICENSE differs from the repository's".into());
        }
    }
    let extension = files.get(&format!("{prefix}pipe_water.gdextension")).and_then(|t| GdExtension::parse(&String::from_utf8_lossy(t)).ok()).unwrap_or_default();
    for (class, icon) in extension.section("icons") {
        let name = unquote(icon).replacen("res://", "", 1);
        if !files.contains_key(&name) {
            problems.push(format!("{class}'s icon {name} is missing"));
        }
    }
    for library in libraries {
        let inside: Vec<&String> = files.keys().filter(|f| *f == library || f.starts_with(&format!("{library}/"))).collect();
        if library.ends_with(".framework") {
            let binary = format!("{library}/{}", library.rsplit('/').next().unwrap_or("").trim_end_matches(".framework"));
            for needed in [binary, format!("{library}/Resources/Info.plist")] {
                if !files.contains_key(&needed) {
                    problems.push(format!("{needed} is missing from the framework"));
                }
            }
        } else if inside.is_empty() {
            problems.push(format!("{library} is missing"));
        }
        for file in inside {
            match elf_has_symbol_table(&files[file]) {
                Some(true) => problems.push(format!("{file} is not stripped: it has a symbol table")),
                Some(false) | None => {}
            }
        }
    }
    if !problems.is_empty() {
        return Err(format!("{} is not a good release zip:\n  {}", path.display(), problems.join("\n  ")));
    }
    Ok(Report { files: files.iter().map(|(name, data)| (name.clone(), data.len() as u64)).collect() })
}

/// The zip's files (not folders) and their contents, by name.
fn read_zip(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut files = BTreeMap::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| format!("reading entry {i} of {}: {e}", path.display()))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().map_err(|e| e.to_string())?.to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(|e| format!("reading {name} from {}: {e}", path.display()))?;
        files.insert(name, data);
    }
    Ok(files)
}

/// Whether an ELF file has a symbol table (`SHT_SYMTAB`, which stripping removes; the dynamic
/// symbols Godot looks the entry point up in are in `.dynsym`). `None` when it is not a 64-bit
/// little-endian ELF file, such as a Windows or macOS library.
pub fn elf_has_symbol_table(data: &[u8]) -> Option<bool> {
    const SHT_SYMTAB: u32 = 2;
    if data.len() < 64 || &data[..4] != b"\x7fELF" || data[4] != 2 || data[5] != 1 {
        return None;
    }
    let u16_at = |at: usize| data.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |at: usize| data.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |at: usize| data.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize);
    let (offset, size, count) = (u64_at(0x28)?, u16_at(0x3A)?, u16_at(0x3C)?);
    let mut found = false;
    for i in 0..count {
        found |= u32_at(offset + i * size + 4)? == SHT_SYMTAB;
    }
    Some(found)
}

/// Unpacks the zip into `dir` (emptied first); returns the files written.
pub fn extract(zip_path: &Path, dir: &Path) -> Result<Vec<String>, String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let file = std::fs::File::open(zip_path).map_err(|e| format!("opening {}: {e}", zip_path.display()))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("reading {}: {e}", zip_path.display()))?;
    archive.extract(dir).map_err(|e| format!("unzipping {} into {}: {e}", zip_path.display(), dir.display()))?;
    Ok(read_zip(zip_path)?.into_keys().collect())
}

/// The minimal `project.godot` of a fresh project the zip is unzipped into.
pub const FRESH_PROJECT: &str = "; A fresh project with nothing but the PipeWater release zip unzipped into it.\nconfig_version=5\n\n[application]\n\nconfig/name=\"PipeWater package check\"\n";

/// The zip the test command checks.
#[derive(Debug, Clone)]
pub struct TestPackage {
    /// The zip, built from this machine's stripped debug library.
    pub zip: PathBuf,
}

/// The test command's package layer: builds this machine's debug library stripped (installing
/// it into the addon, where the Godot layers use it too), writes and checks a zip of it in
/// `target/package-test/`, and unzips it into a fresh project there, checking that every file
/// arrived whole.
pub fn test_package() -> Result<TestPackage, String> {
    build_and_install_with(&BuildOptions { profile: Profile::Debug, strip: true, targets: Vec::new() })?;
    let dir = target_dir().join("package-test");
    let zip = dir.join(zip_name());
    let report = write_and_verify(&zip, &Libraries::Host(vec![Profile::Debug]))?;
    let project = dir.join("project");
    let unzipped = extract(&zip, &project)?;
    let mut problems = Vec::new();
    for (name, size) in &report.files {
        let on_disk = std::fs::metadata(project.join(name)).map(|m| m.len()).ok();
        if on_disk != Some(*size) {
            problems.push(format!("{name}: {size} bytes in the zip, {on_disk:?} unzipped"));
        }
    }
    if !problems.is_empty() || unzipped.len() != report.files.len() {
        return Err(format!("unzipping {} went wrong: {problems:?}", zip.display()));
    }
    std::fs::write(project.join("project.godot"), FRESH_PROJECT).map_err(|e| format!("writing the fresh project: {e}"))?;
    let libraries: Vec<&(String, u64)> = report.files.iter().filter(|(n, _)| n.contains("/bin/")).collect();
    println!(
        "package: {} checked ({} files, {:.1} MiB; libraries {:?}), unzipped whole into {}",
        zip.display(),
        report.files.len(),
        mib(report.bytes()),
        libraries,
        project.display()
    );
    Ok(TestPackage { zip })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = target_dir().join("package-unit-tests").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        dir
    }

    #[test]
    fn the_plugin_cfg_version_is_the_workspace_version() {
        let text = std::fs::read_to_string(root().join(ADDON).join("plugin.cfg")).expect("plugin.cfg");
        let version = GdExtension::parse(&text).expect("parses").value("plugin", "version");
        println!("plugin.cfg version {version:?}, workspace {VERSION}");
        assert_eq!(version.as_deref(), Some(VERSION));
        let rewritten = with_version(&text, "9.8.7").expect("has a version line");
        println!("{rewritten}");
        assert_eq!(GdExtension::parse(&rewritten).expect("parses").value("plugin", "version").as_deref(), Some("9.8.7"));
        assert_eq!(rewritten.lines().count(), text.lines().count(), "only the version line changes");
    }

    #[test]
    fn a_zip_of_the_addon_holds_its_files_the_licence_and_nothing_of_the_tests_or_demo() {
        let zip = scratch("addon").join(zip_name());
        let report = write_and_verify(&zip, &Libraries::Host(Vec::new())).expect("the addon without libraries zips and checks");
        for (name, size) in &report.files {
            println!("{size:>8}  {name}");
        }
        let names: Vec<&str> = report.files.iter().map(|(n, _)| n.as_str()).collect();
        for required in REQUIRED {
            assert!(names.contains(&format!("{ADDON}/{required}").as_str()), "{required} is in the zip");
        }
        for committed in committed_addon_files().expect("git ls-files") {
            assert!(names.contains(&committed.as_str()), "{committed} is in the zip");
        }
        assert_eq!(names.len(), committed_addon_files().expect("git ls-files").len() + 1, "the committed files and the licence, nothing else");
        // The same inputs give the same bytes.
        let again = scratch("addon-again").join(zip_name());
        write_and_verify(&again, &Libraries::Host(Vec::new())).expect("zips again");
        assert_eq!(std::fs::read(&zip).expect("zip"), std::fs::read(&again).expect("zip"), "the zip is reproducible");
    }

    #[test]
    fn the_check_refuses_test_files_hidden_files_missing_pieces_and_unstripped_libraries() {
        let good = collect(&[]).expect("the addon's files");
        let cases: Vec<(&str, Box<dyn Fn(&mut Vec<Entry>)>, Vec<String>)> = vec![
            ("a test script", Box::new(|e| e.push(Entry { name: format!("{ADDON}/tests/test_pool.gd"), data: vec![], binary: false })), vec![]),
            ("a demo scene", Box::new(|e| e.push(Entry { name: format!("{ADDON}/demo/main.tscn"), data: vec![], binary: false })), vec![]),
            ("an import record", Box::new(|e| e.push(Entry { name: format!("{ADDON}/icons/pipe_water.svg.import"), data: vec![], binary: false })), vec![]),
            ("a file outside the addon", Box::new(|e| e.push(Entry { name: "README.md".into(), data: vec![], binary: false })), vec![]),
            ("no licence", Box::new(|e| e.retain(|x| !x.name.ends_with("/LICENSE"))), vec![]),
            ("a script without its .uid", Box::new(|e| e.retain(|x| !x.name.ends_with("buoyancy_probe.gd.uid"))), vec![]),
            ("another version in plugin.cfg", Box::new(|e| e.iter_mut().filter(|x| x.name.ends_with("plugin.cfg")).for_each(|x| x.data = with_version(&String::from_utf8_lossy(&x.data), "0.0.9").expect("version").into_bytes())), vec![]),
            ("a missing icon", Box::new(|e| e.retain(|x| !x.name.ends_with("pipe_water_body.svg"))), vec![]),
            ("a missing library", Box::new(|_| {}), vec![format!("{ADDON}/bin/libpipewater_godot.linux.debug.x86_64.so")]),
            (
                "an unstripped library",
                Box::new(|e| e.push(Entry { name: format!("{ADDON}/bin/libpipewater_godot.linux.debug.x86_64.so"), data: tiny_elf(true), binary: true })),
                vec![format!("{ADDON}/bin/libpipewater_godot.linux.debug.x86_64.so")],
            ),
            ("a framework without its plist", Box::new(|e| e.push(Entry { name: format!("{ADDON}/bin/l.macos.debug.framework/l.macos.debug"), data: vec![1], binary: true })), vec![format!("{ADDON}/bin/l.macos.debug.framework")]),
        ];
        let dir = scratch("refused");
        let zip = dir.join("case.zip");
        write_zip(&zip, &good).expect("writes");
        println!("the addon as committed passes: {:?}", verify(&zip, &[]).map(|r| r.files.len()));
        assert!(verify(&zip, &[]).is_ok());
        for (what, change, libraries) in cases {
            let mut entries = good.clone();
            change(&mut entries);
            write_zip(&zip, &entries).expect("writes");
            let got = verify(&zip, &libraries);
            println!("{what}: {got:?}");
            assert!(got.is_err(), "{what} is refused");
        }
        // A stripped library passes.
        let mut entries = good.clone();
        let stripped = format!("{ADDON}/bin/libpipewater_godot.linux.debug.x86_64.so");
        entries.push(Entry { name: stripped.clone(), data: tiny_elf(false), binary: true });
        write_zip(&zip, &entries).expect("writes");
        assert!(verify(&zip, &[stripped]).is_ok());
    }

    /// A 64-bit little-endian ELF header with two section headers: a string table, and a symbol
    /// table when `with_symtab` (else a second string table).
    fn tiny_elf(with_symtab: bool) -> Vec<u8> {
        let mut data = vec![0u8; 64 + 2 * 64];
        data[..4].copy_from_slice(b"\x7fELF");
        data[4] = 2;
        data[5] = 1;
        data[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        data[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        data[0x3C..0x3E].copy_from_slice(&2u16.to_le_bytes());
        data[64 + 4..64 + 8].copy_from_slice(&3u32.to_le_bytes());
        data[128 + 4..128 + 8].copy_from_slice(&(if with_symtab { 2u32 } else { 3u32 }).to_le_bytes());
        data
    }

    #[test]
    fn the_elf_check_tells_a_symbol_table_apart() {
        println!("with: {:?}, without: {:?}, not ELF: {:?}", elf_has_symbol_table(&tiny_elf(true)), elf_has_symbol_table(&tiny_elf(false)), elf_has_symbol_table(b"MZ\x90\x00"));
        assert_eq!(elf_has_symbol_table(&tiny_elf(true)), Some(true));
        assert_eq!(elf_has_symbol_table(&tiny_elf(false)), Some(false));
        assert_eq!(elf_has_symbol_table(b"MZ\x90\x00"), None);
    }
}
