//! Every WGSL file in `shaders/` parses and validates with naga, as the backend compiles it:
//! `common.wgsl` on its own, and each pass family with `common.wgsl` in front.

use std::path::PathBuf;

fn validate(name: &str, source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| format!("{name}: parse error:\n{}", e.emit_to_string(source)))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
        .validate(&module)
        .map_err(|e| format!("{name}: validation error:\n{}", e.emit_to_string(source)))?;
    let entry_points: Vec<&str> = module.entry_points.iter().map(|e| e.name.as_str()).collect();
    println!("{name}: valid, entry points {entry_points:?}");
    Ok(())
}

#[test]
fn every_wgsl_file_in_shaders_validates_with_naga() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("shaders/ exists").map(|e| e.expect("entry").path()).filter(|p| p.extension().is_some_and(|e| e == "wgsl")).collect();
    files.sort();
    let common = std::fs::read_to_string(dir.join("common.wgsl")).expect("common.wgsl");
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).expect("readable");
        let source = match name.as_str() {
            "common.wgsl" => text,
            _ => format!("{common}\n{text}"),
        };
        if let Err(e) = validate(&name, &source) {
            failures.push(e);
        }
    }
    println!("{} WGSL files checked", files.len());
    assert!(files.len() >= 4, "expected common, step, edits and snapshot shaders, found {files:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The sources compiled into the backend are the files on disk (no stale copy), and every
/// file on disk is compiled by the backend.
#[cfg(feature = "gpu")]
#[test]
fn the_backend_compiles_exactly_the_files_in_shaders() {
    use pipewater_core::backend::gpu::shaders;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders");
    let common = std::fs::read_to_string(dir.join("common.wgsl")).unwrap();
    let families = shaders::pass_families();
    for (name, compiled) in &families {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap();
        let expected = format!("{common}\n{on_disk}");
        assert_eq!(compiled, &expected, "{name} differs from the compiled source");
        validate(name, compiled).unwrap();
    }
    let on_disk = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "wgsl")).count();
    assert_eq!(on_disk, families.len() + 1, "a WGSL file in shaders/ is not compiled by the backend");
}
