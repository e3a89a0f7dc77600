//! Every WGSL file in `shaders/` parses and validates with naga, as the backend compiles it:
//! `common.wgsl` on its own, and each pass family with `common.wgsl` in front.

use std::path::PathBuf;

/// The pass family that has `snapshot.wgsl` in front (it reads the flow through `cell_texels`).
const DETAIL: &str = "detail.wgsl";
const SNAPSHOT: &str = "snapshot.wgsl";

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
    let snapshot = std::fs::read_to_string(dir.join(SNAPSHOT)).expect("snapshot.wgsl");
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).expect("readable");
        let source = match name.as_str() {
            "common.wgsl" => text,
            DETAIL => format!("{common}\n{snapshot}\n{text}"),
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
    let snapshot = std::fs::read_to_string(dir.join(SNAPSHOT)).unwrap();
    let families = shaders::pass_families();
    for (name, compiled) in &families {
        let on_disk = std::fs::read_to_string(dir.join(name)).unwrap();
        let expected = if *name == DETAIL { format!("{common}
{snapshot}
{on_disk}") } else { format!("{common}
{on_disk}") };
        assert_eq!(compiled, &expected, "{name} differs from the compiled source");
        validate(name, compiled).unwrap();
    }
    let on_disk = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "wgsl")).count();
    assert_eq!(on_disk, families.len() + 1, "a WGSL file in shaders/ is not compiled by the backend");
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
    let source = shaders::with_common(shaders::DETAIL);
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
