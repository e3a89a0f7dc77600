//! `cargo xtask build [--release] [--strip] [--target <triple>]…`: builds the GDExtension and
//! installs it into the addon.
//!
//! The library goes to `addons/pipe_water/bin/` under the name `pipe_water.gdextension` gives the
//! target's platform, profile and architecture ([`crate::gdextension`] resolves it as Godot
//! does), and `godot_project/addons/pipe_water` is made a link to `addons/pipe_water` (a copy
//! where links are not available) so that the demo and the headless tests load the freshly built
//! addon.
//!
//! Without `--target` it builds for this machine. Windows and Linux targets give one library
//! each; macOS gets a framework (`<name>.framework/<name>` and `Resources/Info.plist`, the
//! bundle Godot's macOS export expects), and two apple-darwin targets are joined with `lipo`
//! into one universal framework. `--strip` leaves the symbols and debug information out (cargo's
//! `strip = "symbols"`), as in release zips.

use crate::gdextension::{repository_path, GdExtension};
use crate::util::{cargo, root, run as run_command};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest macOS the framework declares and is built for (`MACOSX_DEPLOYMENT_TARGET`):
/// Godot 4.3's own minimum.
pub const MACOS_MINIMUM: &str = "10.13";
/// The crate built into the extension.
const PACKAGE: &str = "pipewater-godot";

/// A cargo build profile, and its name as a Godot feature tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// cargo's `dev` profile: Godot's `debug` tag (the editor, debug exports).
    Debug,
    /// cargo's `release` profile: Godot's `release` tag (release exports).
    Release,
}

impl Profile {
    /// The Godot feature tag, which is also the folder cargo writes the profile's output to.
    pub fn tag(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }

    /// cargo's name for the profile, as in `CARGO_PROFILE_<NAME>_STRIP`.
    fn cargo_name(self) -> &'static str {
        match self {
            Profile::Debug => "DEV",
            Profile::Release => "RELEASE",
        }
    }
}

/// What to build for: this machine, or a target triple; with its Godot platform and
/// architecture tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The triple passed to `cargo --target`, `None` for this machine.
    pub triple: Option<String>,
    /// Godot's platform tag: `linux`, `windows` or `macos`.
    pub platform: &'static str,
    /// Godot's architecture tag: `x86_64` or `arm64`.
    pub arch: &'static str,
}

impl Target {
    /// This machine.
    pub fn host() -> Result<Self, String> {
        Ok(Target { triple: None, platform: platform_tag(std::env::consts::OS)?, arch: arch_tag(std::env::consts::ARCH)? })
    }

    /// A rustc target triple such as `aarch64-unknown-linux-gnu` or `x86_64-pc-windows-msvc`.
    pub fn from_triple(triple: &str) -> Result<Self, String> {
        let arch = arch_tag(triple.split('-').next().unwrap_or(""))?;
        let os = if triple.contains("-linux-") {
            "linux"
        } else if triple.contains("-windows-") {
            "windows"
        } else if triple.ends_with("-apple-darwin") {
            "macos"
        } else {
            return Err(format!("--target {triple}: PipeWater ships Linux, Windows and macOS libraries only"));
        };
        Ok(Target { triple: Some(triple.to_string()), platform: platform_tag(os)?, arch })
    }

    /// The library cargo writes for this target and `profile`.
    fn built_library(&self, profile: Profile) -> PathBuf {
        let file = match self.platform {
            "windows" => "pipewater_godot.dll",
            "macos" => "libpipewater_godot.dylib",
            _ => "libpipewater_godot.so",
        };
        let mut dir = target_dir();
        if let Some(triple) = &self.triple {
            dir = dir.join(triple);
        }
        dir.join(profile.tag()).join(file)
    }
}

/// Godot's platform tag for Rust's `std::env::consts::OS` name.
fn platform_tag(os: &str) -> Result<&'static str, String> {
    match os {
        "linux" => Ok("linux"),
        "windows" => Ok("windows"),
        "macos" => Ok("macos"),
        other => Err(format!("no .gdextension entry for {other}: PipeWater ships Linux, Windows and macOS libraries")),
    }
}

/// Godot's architecture tag for a Rust architecture name.
fn arch_tag(arch: &str) -> Result<&'static str, String> {
    match arch {
        "x86_64" => Ok("x86_64"),
        "aarch64" => Ok("arm64"),
        other => Err(format!("no .gdextension entry for architecture {other:?}: PipeWater ships x86_64 and arm64")),
    }
}

/// What `cargo xtask build` does.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The cargo profile.
    pub profile: Profile,
    /// Whether to leave symbols and debug information out of the library.
    pub strip: bool,
    /// The targets; empty for this machine. More than one only for macOS (a universal framework).
    pub targets: Vec<Target>,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: `cargo xtask build [--release] [--strip] [--target <triple>]…`";
    let mut options = BuildOptions { profile: Profile::Debug, strip: false, targets: Vec::new() };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--release" => options.profile = Profile::Release,
            "--strip" => options.strip = true,
            "--target" => options.targets.push(Target::from_triple(args.next().ok_or(format!("--target needs a triple; {usage}"))?)?),
            other => match other.strip_prefix("--target=") {
                Some(triple) => options.targets.push(Target::from_triple(triple)?),
                None => return Err(format!("unknown option {other}: {usage}")),
            },
        }
    }
    build_and_install_with(&options).map(|installed| println!("installed {}", installed.display()))
}

/// Builds `pipewater-godot` for this machine (debug or release, with symbols), installs it and
/// links the addon into the demo project. Returns the installed library's path.
pub fn build_and_install(release: bool) -> Result<PathBuf, String> {
    let profile = if release { Profile::Release } else { Profile::Debug };
    build_and_install_with(&BuildOptions { profile, strip: false, targets: Vec::new() })
}

/// Builds `pipewater-godot` as `options` say, installs it where the `.gdextension` points for
/// its platform, profile and architecture, and links the addon into the demo project. Returns
/// the installed library's (or framework's) path.
pub fn build_and_install_with(options: &BuildOptions) -> Result<PathBuf, String> {
    let targets = if options.targets.is_empty() { vec![Target::host()?] } else { options.targets.clone() };
    if targets.len() > 1 && !targets.iter().all(|t| t.platform == "macos") {
        return Err("several --target options make one universal macOS framework: give only apple-darwin triples, or build one target at a time".into());
    }
    let installed = install_path(&targets[0], options.profile)?;
    for target in &targets[1..] {
        if install_path(target, options.profile)? != installed {
            return Err(format!("{:?} and {:?} install to different files: they cannot make one library", targets[0].triple, target.triple));
        }
    }
    for target in &targets {
        let mut command = cargo();
        command.args(["build", "--package", PACKAGE]);
        if options.profile == Profile::Release {
            command.arg("--release");
        }
        if let Some(triple) = &target.triple {
            command.args(["--target", triple]);
        }
        if options.strip {
            command.env(format!("CARGO_PROFILE_{}_STRIP", options.profile.cargo_name()), "symbols");
        }
        if target.platform == "macos" && std::env::var_os("MACOSX_DEPLOYMENT_TARGET").is_none() {
            command.env("MACOSX_DEPLOYMENT_TARGET", MACOS_MINIMUM);
        }
        run_command(&mut command)?;
        let built = target.built_library(options.profile);
        if !built.is_file() {
            return Err(format!("cargo reported success but {} does not exist", built.display()));
        }
    }
    let built: Vec<PathBuf> = targets.iter().map(|t| t.built_library(options.profile)).collect();
    let bin = installed.parent().ok_or("the install path has a folder")?;
    std::fs::create_dir_all(bin).map_err(|e| format!("creating {}: {e}", bin.display()))?;
    // Assemble under a temporary name and rename, so that a running editor never sees half a
    // library.
    let partial = bin.join(format!("{}.partial", file_name(&installed)?));
    remove_any(&partial)?;
    if targets[0].platform == "macos" {
        make_framework(&partial, &stem(&installed)?, &built)?;
    } else {
        std::fs::copy(&built[0], &partial).map_err(|e| format!("copying {} to {}: {e}", built[0].display(), partial.display()))?;
    }
    remove_any(&installed)?;
    std::fs::rename(&partial, &installed).map_err(|e| format!("renaming {} to {}: {e}", partial.display(), installed.display()))?;
    link_addon_into_demo(&root().join("addons/pipe_water"))?;
    Ok(installed)
}

/// Where the library for `target` and `profile` goes: the `.gdextension` entry Godot would load
/// there, as a path in the repository.
pub fn install_path(target: &Target, profile: Profile) -> Result<PathBuf, String> {
    let extension = GdExtension::read()?;
    let features = [target.platform, profile.tag(), target.arch];
    let entry = extension
        .library_for(&features)
        .ok_or_else(|| format!("{} has no [libraries] entry for {}", crate::gdextension::PATH, features.join(".")))?;
    repository_path(&entry).ok_or_else(|| format!("{entry} (for {}) is not inside {}", features.join("."), crate::gdextension::ADDON_RES))
}

/// A macOS framework at `dir`: the library (or the `lipo` of several architectures) as
/// `dir/<name>`, and `dir/Resources/Info.plist`.
fn make_framework(dir: &Path, name: &str, libraries: &[PathBuf]) -> Result<(), String> {
    let resources = dir.join("Resources");
    std::fs::create_dir_all(&resources).map_err(|e| format!("creating {}: {e}", resources.display()))?;
    let binary = dir.join(name);
    if let [only] = libraries {
        std::fs::copy(only, &binary).map_err(|e| format!("copying {} to {}: {e}", only.display(), binary.display()))?;
    } else {
        run_command(Command::new("lipo").arg("-create").arg("-output").arg(&binary).args(libraries))?;
    }
    let plist = resources.join("Info.plist");
    std::fs::write(&plist, info_plist(name, env!("CARGO_PKG_VERSION"))).map_err(|e| format!("writing {}: {e}", plist.display()))
}

/// The `Info.plist` of the framework whose binary is `name`: the keys Godot's macOS export
/// requires of a framework (else it writes its own with a warning), the version, and the oldest
/// macOS.
pub fn info_plist(name: &str, version: &str) -> String {
    let identifier: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' }).collect();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>CFBundleExecutable</key>
	<string>{name}</string>
	<key>CFBundleIdentifier</key>
	<string>org.pipewater.{identifier}</string>
	<key>CFBundleInfoDictionaryVersion</key>
	<string>6.0</string>
	<key>CFBundleName</key>
	<string>{name}</string>
	<key>CFBundlePackageType</key>
	<string>FMWK</string>
	<key>CFBundleShortVersionString</key>
	<string>{version}</string>
	<key>CFBundleVersion</key>
	<string>{version}</string>
	<key>CFBundleSupportedPlatforms</key>
	<array>
		<string>MacOSX</string>
	</array>
	<key>LSMinimumSystemVersion</key>
	<string>{MACOS_MINIMUM}</string>
</dict>
</plist>
"#
    )
}

fn file_name(path: &Path) -> Result<String, String> {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| format!("{} has no file name", path.display()))
}

/// The file name without its last extension (`x.macos.debug.framework` → `x.macos.debug`).
fn stem(path: &Path) -> Result<String, String> {
    path.file_stem().map(|n| n.to_string_lossy().into_owned()).ok_or_else(|| format!("{} has no file name", path.display()))
}

/// Removes a file or a folder, if there is one.
fn remove_any(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).map_err(|e| format!("removing {}: {e}", path.display())),
        Ok(_) => std::fs::remove_file(path).map_err(|e| format!("removing {}: {e}", path.display())),
        Err(_) => Ok(()),
    }
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        }
        _ => root().join("target"),
    }
}

/// Makes `godot_project/addons/pipe_water` point at the addon (a symlink, or a copy elsewhere),
/// and lists the extension in `godot_project/.godot/extension_list.cfg` so that the first
/// headless import of a fresh checkout loads it at start (see
/// [`crate::gdextension::seed_extension_list`]).
fn link_addon_into_demo(addon: &Path) -> Result<(), String> {
    let project = root().join("godot_project");
    if !project.is_dir() {
        return Ok(());
    }
    crate::gdextension::seed_extension_list(&project)?;
    let addons = project.join("addons");
    std::fs::create_dir_all(&addons).map_err(|e| format!("creating {}: {e}", addons.display()))?;
    let link = addons.join("pipe_water");
    if let Ok(meta) = std::fs::symlink_metadata(&link) {
        if meta.file_type().is_symlink() {
            if std::fs::canonicalize(&link).ok().as_deref() == std::fs::canonicalize(addon).ok().as_deref() {
                return Ok(());
            }
            std::fs::remove_file(&link).map_err(|e| format!("removing {}: {e}", link.display()))?;
        } else {
            remove_any(&link).map_err(|e| format!("removing the old copy: {e}"))?;
        }
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("../../addons/pipe_water", &link).map_err(|e| format!("linking {}: {e}", link.display()))
    }
    #[cfg(not(unix))]
    {
        copy_dir(addon, &link)
    }
}

#[cfg(not(unix))]
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_map_to_godots_platform_and_architecture_tags() {
        let cases = [
            ("x86_64-unknown-linux-gnu", Some(("linux", "x86_64"))),
            ("aarch64-unknown-linux-gnu", Some(("linux", "arm64"))),
            ("x86_64-pc-windows-msvc", Some(("windows", "x86_64"))),
            ("x86_64-pc-windows-gnu", Some(("windows", "x86_64"))),
            ("aarch64-apple-darwin", Some(("macos", "arm64"))),
            ("x86_64-apple-darwin", Some(("macos", "x86_64"))),
            ("wasm32-unknown-unknown", None),
            ("riscv64gc-unknown-linux-gnu", None),
        ];
        for (triple, expected) in cases {
            let got = Target::from_triple(triple);
            println!("{triple} -> {got:?}");
            assert_eq!(got.ok().map(|t| (t.platform, t.arch)), expected);
        }
    }

    #[test]
    fn every_shipped_triple_installs_into_bin_under_its_own_name() {
        let triples = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "x86_64-pc-windows-msvc", "aarch64-apple-darwin"];
        let mut seen = Vec::new();
        for triple in triples {
            let target = Target::from_triple(triple).expect("known");
            for profile in [Profile::Debug, Profile::Release] {
                let path = install_path(&target, profile).expect("an entry");
                println!("{triple} {profile:?} -> {}", path.display());
                assert!(path.starts_with(root().join("addons/pipe_water/bin")));
                assert!(!seen.contains(&path), "{} is installed twice", path.display());
                seen.push(path);
            }
        }
        let universal = [Target::from_triple("aarch64-apple-darwin"), Target::from_triple("x86_64-apple-darwin")].map(|t| install_path(&t.expect("known"), Profile::Release).expect("an entry"));
        println!("macOS arm64 and x86_64 release -> {universal:?}");
        assert_eq!(universal[0], universal[1], "both architectures go into one universal framework");
        assert!(universal[0].extension().is_some_and(|e| e == "framework"));
    }

    #[test]
    fn the_framework_plist_has_every_key_godots_macos_export_requires() {
        // The keys Godot's macOS exporter checks before it copies a framework as it is
        // (platform/macos/export/export_plugin.cpp, `_copy_and_sign_files`).
        let required = ["CFBundleExecutable", "CFBundleIdentifier", "CFBundlePackageType", "CFBundleInfoDictionaryVersion", "CFBundleName", "CFBundleSupportedPlatforms"];
        let plist = info_plist("libpipewater_godot.macos.release", "0.1.0");
        println!("{plist}");
        for key in required {
            assert!(plist.contains(&format!("<key>{key}</key>")), "{key} is present");
        }
        assert!(plist.contains("<key>CFBundleExecutable</key>\n\t<string>libpipewater_godot.macos.release</string>"), "the executable is the framework's binary");
        assert!(plist.contains("<string>FMWK</string>"));
        assert!(plist.contains("org.pipewater.libpipewater-godot.macos.release"), "the identifier has only letters, digits, dots and dashes");
    }
}
