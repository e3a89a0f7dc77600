//! Every WGSL file in `shaders/` parses and validates with naga, as the backend compiles it:
//! `common.wgsl` on its own, and each pass family with the shared fragments it lists in front.

use std::path::PathBuf;

/// The shared fragment with the ledger's `count`.
const LEDGER_COUNTERS: &str = "ledger_counters.wgsl";
/// Where a cell's fields lie: a dense grid's buffers, or a world's pages (the world's step and
/// plan compile their families with this fragment in place of the dense one).
const CELLS_DENSE: &str = "cells_dense.wgsl";
const CELLS_PAGED: &str = "cells_paged.wgsl";
const TEXELS_DENSE: &str = "texels_dense.wgsl";
const TEXELS_PAGED: &str = "texels_paged.wgsl";

/// The files a pass family's own file is compiled after, in order, as backend/gpu/shaders.rs
/// lists them (`the_backend_compiles_exactly_the_files_in_shaders` checks the two agree); `None`
/// for a fragment that is compiled only inside the families that list it.
fn fragments_in_front(file: &str) -> Option<Vec<&'static str>> {
    match file {
        "common.wgsl" => Some(vec![]),
        LEDGER_COUNTERS | CELLS_DENSE | CELLS_PAGED | TEXELS_DENSE | TEXELS_PAGED => None,
        // The snapshot's `cell_texels` reads a dense grid's fields through texels_dense.wgsl.
        "snapshot.wgsl" => Some(vec!["common.wgsl", TEXELS_DENSE]),
        // A world's far water: the snapshot's `cell_texels`, its reads of the pages its own.
        "world_coarse.wgsl" => Some(vec!["common.wgsl", TEXELS_PAGED, "snapshot.wgsl"]),
        // A world's detail region: the same reads of the pages, into the buffers detail.wgsl reads.
        "world_detail.wgsl" => Some(vec!["common.wgsl", TEXELS_PAGED, "snapshot.wgsl"]),
        "step_columns.wgsl" => Some(vec!["common.wgsl", LEDGER_COUNTERS, CELLS_DENSE]),
        "edits.wgsl" | "cooling.wgsl" | "overwrite.wgsl" => Some(vec!["common.wgsl", LEDGER_COUNTERS]),
        "tiles.wgsl" => Some(vec!["common.wgsl", CELLS_DENSE]),
        // The detail layer reads the flow through snapshot.wgsl's `cell_texels`.
        "detail.wgsl" => Some(vec!["common.wgsl", TEXELS_DENSE, "snapshot.wgsl"]),
        _ => Some(vec!["common.wgsl"]),
    }
}

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
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let Some(in_front) = fragments_in_front(&name) else {
            println!("{name}: a shared fragment, validated in the families that list it");
            continue;
        };
        let mut parts: Vec<String> = in_front.iter().map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))).collect();
        parts.push(std::fs::read_to_string(path).expect("readable"));
        let source = parts.join("\n");
        if let Err(e) = validate(&name, &source) {
            failures.push(e);
        }
    }
    println!("{} WGSL files checked", files.len());
    assert!(files.len() >= 4, "expected common, step, edits and snapshot shaders, found {files:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The sources compiled into the backend are the files on disk (no stale copy), composed in the
/// order `fragments_in_front` states, and every file on disk is compiled into some family.
#[cfg(feature = "gpu")]
#[test]
fn the_backend_compiles_exactly_the_files_in_shaders() {
    use pipewater_core::backend::gpu::shaders;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders");
    let mut used = std::collections::BTreeSet::new();
    for family in shaders::FAMILIES {
        let files: Vec<&str> = family.fragments.iter().map(|f| f.file).collect();
        println!("{}: {}", family.file(), files.join(" + "));
        let on_disk: Vec<String> = files.iter().map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))).collect();
        assert_eq!(family.source(), on_disk.join("\n"), "{} differs from the files on disk", family.file());
        assert_eq!(fragments_in_front(family.file()), Some(files[..files.len() - 1].to_vec()), "{}: the fragments in front", family.file());
        validate(family.file(), &family.source()).unwrap();
        used.extend(files);
    }
    // A world's step and plan: the dense families with the paged cells in place of the dense.
    for (world, dense) in [(shaders::WORLD_STEP, shaders::STEP), (shaders::WORLD_TILES, shaders::TILES)] {
        let files: Vec<&str> = world.fragments.iter().map(|f| f.file).collect();
        let swapped: Vec<&str> = dense.fragments.iter().map(|f| if f.file == CELLS_DENSE { CELLS_PAGED } else { f.file }).collect();
        println!("world {}: {}", world.file(), files.join(" + "));
        assert_eq!(files, swapped, "the world's {} differs from the dense family by more than its cells", world.file());
        validate(&format!("world {}", world.file()), &world.source()).unwrap();
        used.extend(files);
    }
    let on_disk: std::collections::BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "wgsl")).map(|p| p.file_name().unwrap().to_string_lossy().to_string()).collect();
    let unused: Vec<&String> = on_disk.iter().filter(|f| !used.contains(f.as_str())).collect();
    assert!(unused.is_empty(), "WGSL files in shaders/ that no family compiles: {unused:?}");
}

/// What Rust and `detail.wgsl` must agree on: the uniform layout of `DetailConstants` (member
/// by member, against `offset_of!`), the access of every binding the wgpu backend's layout
/// declares, the workgroup sizes the backends dispatch with, and the substep's boxes: the reach
/// of its advection against `MAX_ADVECTION_CELLS`, and its workgroup memory within the 16 KiB
/// every Vulkan device and wgpu's default limits allow.
#[cfg(feature = "gpu")]
#[test]
fn the_detail_layouts_and_workgroups_agree_with_the_wgsl() {
    use pipewater_core::backend::gpu::detail::{BindingUse, DETAIL_BINDINGS, DETAIL_GROUP, DETAIL_LIST_WORKGROUP, DETAIL_WORKGROUP};
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::detail::tiles::DETAIL_TILE;
    use pipewater_core::detail::DetailConstants;
    use std::mem::offset_of;
    let source = shaders::DETAIL.source();
    let module = naga::front::wgsl::parse_str(&source).expect("parses");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let (handle, ty) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some("DetailConstants")).expect("DetailConstants in detail.wgsl");
    let naga::TypeInner::Struct { members, span } = &ty.inner else { panic!("a struct") };
    let rust: [(&str, usize); 30] = [
        ("window", offset_of!(DetailConstants, window)),
        ("subdivision", offset_of!(DetailConstants, subdivision)),
        ("origin_x", offset_of!(DetailConstants, origin_x)),
        ("origin_y", offset_of!(DetailConstants, origin_y)),
        ("previous_x", offset_of!(DetailConstants, previous_x)),
        ("previous_y", offset_of!(DetailConstants, previous_y)),
        ("storage_x", offset_of!(DetailConstants, storage_x)),
        ("storage_y", offset_of!(DetailConstants, storage_y)),
        ("phase_x", offset_of!(DetailConstants, phase_x)),
        ("phase_y", offset_of!(DetailConstants, phase_y)),
        ("flow_x", offset_of!(DetailConstants, flow_x)),
        ("flow_y", offset_of!(DetailConstants, flow_y)),
        ("flow_side", offset_of!(DetailConstants, flow_side)),
        ("grid_width", offset_of!(DetailConstants, grid_width)),
        ("grid_height", offset_of!(DetailConstants, grid_height)),
        ("substeps", offset_of!(DetailConstants, substeps)),
        ("dt", offset_of!(DetailConstants, dt)),
        ("dt_over_cell", offset_of!(DetailConstants, dt_over_cell)),
        ("laplacian_scale", offset_of!(DetailConstants, laplacian_scale)),
        ("slope_scale", offset_of!(DetailConstants, slope_scale)),
        ("decay", offset_of!(DetailConstants, decay)),
        ("max_celerity_squared", offset_of!(DetailConstants, max_celerity_squared)),
        ("gravity", offset_of!(DetailConstants, gravity)),
        ("inverse_subdivision", offset_of!(DetailConstants, inverse_subdivision)),
        ("sponge_cells", offset_of!(DetailConstants, sponge_cells)),
        ("sponge_rate", offset_of!(DetailConstants, sponge_rate)),
        ("rain_threshold", offset_of!(DetailConstants, rain_threshold)),
        ("rain_drop", offset_of!(DetailConstants, rain_drop)),
        ("seed", offset_of!(DetailConstants, seed)),
        ("ripple_count", offset_of!(DetailConstants, ripple_count)),
    ];
    for (name, offset) in rust {
        let member = members.iter().find(|m| m.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("{name} in the WGSL struct"));
        assert_eq!(member.offset as usize, offset, "{name}");
    }
    println!("DetailConstants: {} members, {} bytes in WGSL (align {:?}), {} in Rust", members.len(), span, layouter[handle].alignment, std::mem::size_of::<DetailConstants>());
    assert_eq!(*span as usize, std::mem::size_of::<DetailConstants>());

    for (binding, kind) in DETAIL_BINDINGS {
        let (_, var) = module
            .global_variables
            .iter()
            .find(|(_, v)| v.binding.as_ref().is_some_and(|b| b.group == DETAIL_GROUP && b.binding == binding))
            .unwrap_or_else(|| panic!("binding {binding} of group {DETAIL_GROUP}"));
        let declared = match var.space {
            naga::AddressSpace::Uniform => BindingUse::Uniform,
            naga::AddressSpace::Storage { access } => BindingUse::Storage { read_only: !access.contains(naga::StorageAccess::STORE) },
            other => panic!("{:?}: {other:?}", var.name),
        };
        println!("group {DETAIL_GROUP} binding {binding} `{}`: {declared:?}", var.name.as_deref().unwrap_or(""));
        assert_eq!(declared, kind, "binding {binding}");
    }

    let workgroups = [
        ("detail_press", [DETAIL_LIST_WORKGROUP, 1, 1]),
        ("detail_scroll", [DETAIL_WORKGROUP, DETAIL_WORKGROUP, 1]),
        ("detail_force", [DETAIL_WORKGROUP, DETAIL_WORKGROUP, 1]),
        ("detail_substep", [DETAIL_WORKGROUP, DETAIL_WORKGROUP, 1]),
        ("detail_pack_texels", [DETAIL_WORKGROUP, DETAIL_WORKGROUP, 1]),
        ("detail_store_image", [DETAIL_WORKGROUP, DETAIL_WORKGROUP, 1]),
        ("detail_gather", [DETAIL_TILE, DETAIL_TILE, 1]),
    ];
    for (entry, size) in workgroups {
        let e = module.entry_points.iter().find(|e| e.name == entry).unwrap_or_else(|| panic!("{entry}"));
        println!("{entry}: workgroup {:?}", e.workgroup_size);
        assert_eq!(e.workgroup_size, size, "{entry}");
    }

    let constant = |name: &str| -> i64 {
        let (_, k) = module.constants.iter().find(|(_, k)| k.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("const {name}"));
        match module.global_expressions[k.init] {
            naga::Expression::Literal(naga::Literal::I32(v)) => v as i64,
            naga::Expression::Literal(naga::Literal::U32(v)) => v as i64,
            naga::Expression::Literal(naga::Literal::F32(v)) => v as i64,
            ref other => panic!("{name}: {other:?}"),
        }
    };
    let reach = pipewater_core::detail::MAX_ADVECTION_CELLS as i64;
    let (behind, ahead, wave_box, velocity_box) = (constant("ADVECT_BEHIND"), constant("ADVECT_AHEAD"), constant("WAVE_BOX"), constant("VELOCITY_BOX"));
    println!("substep: reach {reach} cells, advection reads {behind} behind and {ahead} ahead, wave box {wave_box}, velocity box {velocity_box}");
    assert_eq!(constant("MAX_ADVECTION_CELLS"), reach);
    assert_eq!((behind, ahead), (reach + 2, reach + 3), "the cubic reads two samples behind its point and three ahead");
    assert_eq!(wave_box, DETAIL_WORKGROUP as i64 + behind + ahead);
    assert_eq!(velocity_box, DETAIL_WORKGROUP as i64 + 1, "at subdivision 1 a tile's cells sample one region cell each and one more");
    // What the substep's entry point uses (snapshot.wgsl's reductions share the module).
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all()).validate(&module).expect("validates");
    let substep = module.entry_points.iter().position(|e| e.name == "detail_substep").expect("detail_substep");
    let uses = info.get_entry_point(substep);
    let mut shared_bytes = 0u32;
    for (_, var) in module.global_variables.iter().filter(|&(h, v)| v.space == naga::AddressSpace::WorkGroup && !uses[h].is_empty()) {
        let bytes = module.types[var.ty].inner.size(module.to_ctx());
        let cells = match module.types[var.ty].inner {
            naga::TypeInner::Array { size: naga::ArraySize::Constant(n), .. } => n.get() as i64,
            _ => 1,
        };
        println!("workgroup `{}`: {cells} elements, {bytes} bytes", var.name.as_deref().unwrap_or(""));
        match var.name.as_deref() {
            Some("waved") => assert_eq!(cells, wave_box * wave_box),
            Some("tile_velocity") => assert_eq!(cells, velocity_box * velocity_box),
            _ => {}
        }
        shared_bytes += bytes;
    }
    println!("detail_substep: {shared_bytes} bytes of workgroup memory (limit 16384)");
    assert!(shared_bytes <= 16384);
}

/// One field of a `#[repr(C)]` Rust struct that crosses into WGSL: its name, offset and size,
/// bytes.
#[derive(Debug, Clone, Copy)]
struct RustField {
    name: &'static str,
    offset: usize,
    size: usize,
}

/// Size of the field `field` selects, bytes.
fn field_size<T, F>(_field: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// The fields of a Rust struct, by name, with their offsets (`offset_of!`) and sizes.
macro_rules! rust_fields {
    ($ty:ty: $($field:ident),+ $(,)?) => {
        [$(RustField { name: stringify!($field), offset: std::mem::offset_of!($ty, $field), size: field_size(|s: &$ty| &s.$field) }),+]
    };
}

/// Compares WGSL struct `name` of `module` with a Rust struct of `rust_size` bytes whose fields
/// are `rust`: every member must have a Rust field of the same name at the same offset with the
/// same size, every Rust field a member, and the struct the same size. Returns the compared
/// offsets and sizes as lines, or those lines with what differs.
fn layout_agreement(module: &naga::Module, name: &str, rust: &[RustField], rust_size: usize) -> Result<Vec<String>, Vec<String>> {
    let (_, ty) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("no struct {name} in the WGSL"));
    let naga::TypeInner::Struct { members, span } = &ty.inner else { panic!("{name} is not a struct") };
    let mut lines = Vec::new();
    let mut differs = false;
    for member in members {
        let member_name = member.name.as_deref().unwrap_or("");
        let wgsl_size = module.types[member.ty].inner.size(module.to_ctx()) as usize;
        match rust.iter().find(|f| f.name == member_name) {
            Some(field) => {
                let same = field.offset == member.offset as usize && field.size == wgsl_size;
                differs |= !same;
                lines.push(format!("{name}.{member_name}: WGSL offset {} size {wgsl_size}, Rust offset {} size {}{}", member.offset, field.offset, field.size, if same { "" } else { "  <- differs" }));
            }
            None => {
                differs = true;
                lines.push(format!("{name}.{member_name}: WGSL offset {} size {wgsl_size}, no Rust field of that name  <- differs", member.offset));
            }
        }
    }
    for field in rust.iter().filter(|f| !members.iter().any(|m| m.name.as_deref() == Some(f.name))) {
        differs = true;
        lines.push(format!("{name}.{}: Rust offset {} size {}, no WGSL member of that name  <- differs", field.name, field.offset, field.size));
    }
    differs |= *span as usize != rust_size;
    lines.push(format!("{name}: {} members, WGSL {span} bytes, Rust {rust_size} bytes", members.len()));
    if differs {
        Err(lines)
    } else {
        Ok(lines)
    }
}

/// Parses `common.wgsl` alone, as it is on disk.
fn common_module() -> naga::Module {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders/common.wgsl");
    let source = std::fs::read_to_string(&path).expect("common.wgsl");
    naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)))
}

/// Asserts [`layout_agreement`], printing the compared offsets either way.
fn assert_layouts_agree(module: &naga::Module, name: &str, rust: &[RustField], rust_size: usize) {
    match layout_agreement(module, name, rust, rust_size) {
        Ok(lines) => println!("{}", lines.join("\n")),
        Err(lines) => panic!("{name}: the Rust and WGSL layouts differ:\n{}", lines.join("\n")),
    }
}

/// The layout check itself: a WGSL struct and a Rust struct with the same fields in the same
/// order agree; with two fields swapped, a field renamed or missing, or a vector the Rust side
/// does not align as WGSL does (a `vec4` after a `u32`), they do not.
#[test]
fn the_layout_check_catches_reordered_renamed_missing_and_misaligned_fields() {
    #[repr(C)]
    #[allow(dead_code)] // read only through offset_of! and size_of
    struct Same {
        a: u32,
        b: f32,
        c: [f32; 2],
    }
    #[repr(C)]
    #[allow(dead_code)] // read only through offset_of! and size_of
    struct Reordered {
        b: f32,
        a: u32,
        c: [f32; 2],
    }
    #[repr(C)]
    #[allow(dead_code)] // read only through offset_of! and size_of
    struct Renamed {
        a: u32,
        bee: f32,
        c: [f32; 2],
    }
    #[repr(C)]
    #[allow(dead_code)] // read only through offset_of! and size_of
    struct Missing {
        a: u32,
        b: f32,
    }
    #[repr(C)]
    #[allow(dead_code)] // read only through offset_of! and size_of
    struct Unpadded {
        a: u32,
        v: [f32; 4],
    }
    let module = naga::front::wgsl::parse_str("struct Sample { a: u32, b: f32, c: vec2<f32> }\nstruct Padded { a: u32, v: vec4<f32> }").expect("parses");
    let cases = [
        ("same order", layout_agreement(&module, "Sample", &rust_fields!(Same: a, b, c), std::mem::size_of::<Same>()), true),
        ("a and b swapped", layout_agreement(&module, "Sample", &rust_fields!(Reordered: b, a, c), std::mem::size_of::<Reordered>()), false),
        ("b renamed", layout_agreement(&module, "Sample", &rust_fields!(Renamed: a, bee, c), std::mem::size_of::<Renamed>()), false),
        ("c missing", layout_agreement(&module, "Sample", &rust_fields!(Missing: a, b), std::mem::size_of::<Missing>()), false),
        ("vec4 unpadded", layout_agreement(&module, "Padded", &rust_fields!(Unpadded: a, v), std::mem::size_of::<Unpadded>()), false),
    ];
    for (case, outcome, agrees) in cases {
        let lines = match &outcome {
            Ok(lines) | Err(lines) => lines.join("\n  "),
        };
        println!("{case}: {}\n  {lines}", if outcome.is_ok() { "agree" } else { "differ" });
        assert_eq!(outcome.is_ok(), agrees, "{case}");
    }
}

/// `StepConstants` (pipes.rs) and `common.wgsl`'s struct of the same name agree member by member
/// (offset and size) and in size (144 bytes): the step's uniform is written with bytemuck from
/// the Rust struct and read through the WGSL one.
#[test]
fn the_step_constants_layout_agrees_with_the_wgsl() {
    use pipewater_core::pipes::StepConstants;
    let rust = rust_fields!(StepConstants: width, height, eight_neighbours, depth_dependent, dt, gravity, cell_size, flux_decay, pipe_depth, flux_to_quanta, film, advection, boundary, inflow_quanta, boundary_level, widths, inverse_widths, conductance);
    assert_layouts_agree(&common_module(), "StepConstants", &rust, std::mem::size_of::<StepConstants>());
    assert_eq!(std::mem::size_of::<StepConstants>(), 144, "the size common.wgsl's comment states");
}

/// `TileParams` (backend/sleep.rs) and `common.wgsl`'s struct of the same name agree member by
/// member and in size: the tiles' uniform is written from the Rust struct.
#[test]
fn the_tile_params_layout_agrees_with_the_wgsl() {
    use pipewater_core::backend::sleep::TileParams;
    let rust = rust_fields!(TileParams: tiles, size, sleeping, change, snapshot_slices, padding);
    assert_layouts_agree(&common_module(), "TileParams", &rust, std::mem::size_of::<TileParams>());
}

/// A multiplayer server's `TileChangeParams` (backend/gpu/tile_changes.rs, used by both GPU
/// backends) has `tile_changes.wgsl`'s size and member offsets (naga's layouter), so the pass reads
/// the limit and the tiles the host meant, and its records are the words the host decodes.
#[cfg(feature = "gpu")]
#[test]
fn the_tile_change_params_agree_with_the_wgsl() {
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::backend::gpu::tile_changes::TileChangeParams;
    let source = shaders::TILE_CHANGES.source();
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layouts");
    let (handle, ty) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some("TileChangeParams")).expect("TileChangeParams in the WGSL");
    let naga::TypeInner::Struct { members, span } = &ty.inner else { panic!("TileChangeParams is a struct") };
    let offsets: Vec<(String, u32)> = members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.offset)).collect();
    println!("WGSL TileChangeParams: {span} bytes, members {offsets:?}; host {} bytes, limit at {}", std::mem::size_of::<TileChangeParams>(), std::mem::offset_of!(TileChangeParams, limit));
    assert_eq!(layouter[handle].size, std::mem::size_of::<TileChangeParams>() as u32);
    let at = |name: &str| offsets.iter().find(|(n, _)| n == name).map(|(_, o)| *o as usize);
    assert_eq!(at("width"), Some(std::mem::offset_of!(TileChangeParams, width)));
    assert_eq!(at("height"), Some(std::mem::offset_of!(TileChangeParams, height)));
    assert_eq!(at("tile_size"), Some(std::mem::offset_of!(TileChangeParams, tile_size)));
    assert_eq!(at("tiles_x"), Some(std::mem::offset_of!(TileChangeParams, tiles_x)));
    assert_eq!(at("limit"), Some(std::mem::offset_of!(TileChangeParams, limit)));
    assert_eq!(at("read_every_change"), Some(std::mem::offset_of!(TileChangeParams, read_every_change)));
    assert_eq!(at("tile_count"), Some(std::mem::offset_of!(TileChangeParams, tile_count)));
    // The records the host decodes are as long as the pass writes them.
    let words = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some("TILE_RECORD_WORDS")).map(|(_, c)| &module.global_expressions[c.init]);
    println!("WGSL TILE_RECORD_WORDS: {words:?}; host {}", pipewater_core::backend::TILE_RECORD_WORDS);
    assert!(matches!(words, Some(naga::Expression::Literal(naga::Literal::U32(w))) if *w as usize == pipewater_core::backend::TILE_RECORD_WORDS));
}

/// The far water's `CoarseParams` (backend/gpu/world/coarse.rs) and `texels_paged.wgsl`'s agree
/// member by member and in size, and `world_coarse.wgsl`'s workgroup and count of sums a block
/// are the host's `COARSE_WORKGROUP` and `COARSE_SUMS` (naga's reflection of the entry point and
/// the constant): the host sizes the sums it reads back by them.
#[cfg(feature = "gpu")]
#[test]
fn the_far_water_layouts_agree_with_the_wgsl() {
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::backend::gpu::world::{CoarseParams, COARSE_SUMS, COARSE_WORKGROUP};
    let source = shaders::WORLD_COARSE.source();
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
    let rust = rust_fields!(CoarseParams: origin, blocks, stride, page_side, pages_x, listed);
    assert_layouts_agree(&module, "CoarseParams", &rust, std::mem::size_of::<CoarseParams>());
    let entry = module.entry_points.iter().find(|e| e.name == "coarse_blocks").expect("coarse_blocks in world_coarse.wgsl");
    let sums = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some("COARSE_SUMS")).map(|(_, c)| &module.global_expressions[c.init]);
    println!("coarse_blocks: workgroup {:?} (host {COARSE_WORKGROUP}); COARSE_SUMS {sums:?} (host {COARSE_SUMS})", entry.workgroup_size);
    assert_eq!(entry.workgroup_size, [COARSE_WORKGROUP, 1, 1]);
    assert!(matches!(sums, Some(naga::Expression::Literal(naga::Literal::U32(n))) if *n as usize == COARSE_SUMS), "COARSE_SUMS in the WGSL: {sums:?}");
}

/// The gather of a world's detail region (`world_detail.wgsl`) runs in the square workgroup the
/// host dispatches it with (`REGION_WORKGROUP`), and reads the same `CoarseParams` as the far
/// water (checked above): the host covers the region with that many invocations a side.
#[cfg(feature = "gpu")]
#[test]
fn the_world_detail_gather_agrees_with_the_wgsl() {
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::backend::gpu::world::{CoarseParams, REGION_WORKGROUP};
    let source = shaders::WORLD_DETAIL.source();
    let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&source)));
    let rust = rust_fields!(CoarseParams: origin, blocks, stride, page_side, pages_x, listed);
    assert_layouts_agree(&module, "CoarseParams", &rust, std::mem::size_of::<CoarseParams>());
    let entry = module.entry_points.iter().find(|e| e.name == "gather_detail_region").expect("gather_detail_region in world_detail.wgsl");
    println!("gather_detail_region: workgroup {:?} (host {REGION_WORKGROUP})", entry.workgroup_size);
    assert_eq!(entry.workgroup_size, [REGION_WORKGROUP, REGION_WORKGROUP, 1]);
}

/// The top-level functions of a WGSL file: name and text (from `fn` to the closing brace at the
/// start of a line, as the files in `shaders/` are written).
fn wgsl_functions(text: &str) -> Vec<(String, String)> {
    let mut functions = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some((_, body)) = current.as_mut() {
            body.push(line);
            if line == "}" {
                let (name, body) = current.take().expect("inside a function");
                functions.push((name, body.join("\n")));
            }
        } else if let Some(rest) = line.strip_prefix("fn ") {
            let name = rest.split('(').next().unwrap_or(rest).trim().to_string();
            current = Some((name, vec![line]));
        }
    }
    functions
}

/// The functions that more than one of `files` (name, WGSL text) defines, each with the files
/// that define it.
fn functions_written_more_than_once(files: &[(String, String)]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, Vec<&str>> = std::collections::BTreeMap::new();
    for (file, text) in files {
        let functions = wgsl_functions(text);
        println!("{file}: {} functions", functions.len());
        for (name, _) in functions {
            seen.entry(name).or_default().push(file);
        }
    }
    let twice: Vec<String> = seen.iter().filter(|(_, files)| files.len() > 1).map(|(name, files)| format!("`{name}` in {}", files.join(", "))).collect();
    println!("{} functions in {} files; defined in more than one file: {twice:?}", seen.len(), files.len());
    twice
}

/// Each WGSL function is written once: no two files in `shaders/` define a function of the same
/// name (a shared one lives in a fragment its families list, backend/gpu/shaders.rs). The check
/// itself finds a function copied into two files.
#[test]
fn each_wgsl_function_is_written_once() {
    let copied = [("a.wgsl".to_string(), "fn count(slot: u32) {\n}\nfn only_a() {\n}\n".to_string()), ("b.wgsl".to_string(), "fn count(slot: u32) {\n}\n".to_string())];
    assert_eq!(functions_written_more_than_once(&copied), vec!["`count` in a.wgsl, b.wgsl".to_string()], "the check finds a copy");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("shaders/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    files.sort();
    // The two cells fragments are alternatives, never compiled together: each defines the same
    // functions (checked here), and together they count as one file.
    let of = |name: &str| files.iter().find(|(f, _)| f == name).map(|(_, text)| wgsl_functions(text).into_iter().map(|(n, _)| n).collect::<std::collections::BTreeSet<_>>()).expect(name);
    let (dense, paged) = (of(CELLS_DENSE), of(CELLS_PAGED));
    println!("{CELLS_DENSE} defines {dense:?}; {CELLS_PAGED} defines {paged:?}");
    assert!(dense.iter().all(|f| paged.contains(f)), "{CELLS_PAGED} lacks some of {CELLS_DENSE}'s functions");
    // So are the two texels fragments: the paged one defines every function of the dense one,
    // and its own besides (checked against every other file).
    let (dense, paged) = (of(TEXELS_DENSE), of(TEXELS_PAGED));
    println!("{TEXELS_DENSE} defines {dense:?}; {TEXELS_PAGED} defines {paged:?}");
    assert!(dense.iter().all(|f| paged.contains(f)), "{TEXELS_PAGED} lacks some of {TEXELS_DENSE}'s functions");
    files.retain(|(f, _)| f != CELLS_PAGED && f != TEXELS_DENSE);
    let twice = functions_written_more_than_once(&files);
    assert!(twice.is_empty(), "functions written more than once: {}", twice.join("; "));
}

/// Reads the list `list` (bytes as [`list_bytes`] writes them) through WGSL struct `name` of
/// `module`: its `count` member and each element of its `items` array, at the offsets and stride
/// naga lays them out with. Returns the count and the items' bytes, printing the layout.
#[cfg(feature = "gpu")]
fn read_list_as_wgsl(module: &naga::Module, name: &str, list: &[u8]) -> (u32, Vec<Vec<u8>>) {
    let (_, ty) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("no struct {name} in the WGSL"));
    let naga::TypeInner::Struct { members, .. } = &ty.inner else { panic!("{name} is not a struct") };
    let member = |m: &str| members.iter().find(|x| x.name.as_deref() == Some(m)).unwrap_or_else(|| panic!("{name}.{m}"));
    let count_at = member("count").offset as usize;
    let items = member("items");
    let naga::TypeInner::Array { stride, size: naga::ArraySize::Dynamic, .. } = module.types[items.ty].inner else { panic!("{name}.items is not a runtime-sized array") };
    let (items_at, stride) = (items.offset as usize, stride as usize);
    let count = u32::from_le_bytes(list[count_at..count_at + 4].try_into().expect("4 bytes"));
    println!("{name}: count at {count_at}, items at {items_at}, stride {stride}; {} bytes hold {count} items", list.len());
    let read = (0..count as usize).map(|i| list.get(items_at + i * stride..items_at + (i + 1) * stride).unwrap_or_else(|| panic!("{name}: item {i} lies past the list's {} bytes", list.len())).to_vec()).collect();
    (count, read)
}

/// The edit and body lists the host uploads (`backend::pending::list_bytes` of `CellWater`,
/// `CellTerrain`, `CellDisplacement` and `PipeNudge`) read back, through the WGSL structs that
/// receive them (`WaterEdits`, `TerrainEdits`, `Displacements`, `Nudges`), as the items written:
/// the header's count, the items' offset and their stride agree with the Rust records.
#[cfg(feature = "gpu")]
#[test]
fn the_edit_and_body_lists_agree_with_the_wgsl() {
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::backend::pending::list_bytes;
    use pipewater_core::backend::{CellDisplacement, CellTerrain, CellWater, PipeNudge};
    fn check<T: bytemuck::Pod>(module: &naga::Module, name: &str, items: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        let (count, read) = read_list_as_wgsl(module, name, &list_bytes(bytes, std::mem::size_of::<T>()));
        assert_eq!(count as usize, items.len(), "{name}: count");
        for (i, (got, want)) in read.iter().zip(bytes.chunks(std::mem::size_of::<T>())).enumerate() {
            assert_eq!(got.as_slice(), want, "{name}: item {i}");
        }
    }
    let parse = |family: shaders::Family| naga::front::wgsl::parse_str(&family.source()).unwrap_or_else(|e| panic!("{}: {e}", family.file()));
    let (edits, bodies) = (parse(shaders::EDITS), parse(shaders::BODIES));
    check(&edits, "WaterEdits", &[CellWater { cell: 3, quanta: -7 }, CellWater { cell: 9, quanta: 1 << 20 }, CellWater { cell: 12, quanta: 5 }]);
    check(&edits, "TerrainEdits", &[CellTerrain { cell: 4, delta: -0.25 }, CellTerrain { cell: 8, delta: 1.5 }]);
    check(&bodies, "TerrainEdits", &[CellTerrain { cell: 4, delta: -0.25 }, CellTerrain { cell: 8, delta: 1.5 }]);
    check(&bodies, "Displacements", &[CellDisplacement { cell: 2, head: 0.5 }, CellDisplacement { cell: 5, head: 1.25 }]);
    check(&bodies, "Nudges", &[PipeNudge { cell: 6, velocity_x: 1.0, velocity_y: -2.0, weight: 0.5 }, PipeNudge { cell: 7, velocity_x: 0.0, velocity_y: 3.0, weight: 1.0 }]);
}
