//! The GPU backend's WGSL, translated by naga to SPIR-V for Godot's RenderingDevice.
//!
//! Each RenderingDevice shader holds one entry point of one pass family (its shared fragments in
//! front, exactly as the wgpu backend compiles it: [`shaders::Family::source`]). The module is pruned to that entry point before
//! translation, so the SPIR-V declares only the bindings the entry point uses: Godot reflects
//! every binding a shader declares and wants each one supplied in the uniform set. What is left
//! is listed in [`Program::bindings`], by name, and the backend binds its resources by those
//! names rather than by numbers kept in step by hand.

use naga::back::spv;
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use pipewater_core::backend::gpu::shaders;
use pipewater_core::backend::step_kernel::{ColumnKernel, StepMode};

/// The entry point name Godot's drivers pass to the graphics API, whatever the shader calls it.
pub const GODOT_ENTRY_POINT: &str = "main";

/// What a binding is, as Godot's uniform sets name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<uniform>`: `UNIFORM_TYPE_UNIFORM_BUFFER`.
    UniformBuffer,
    /// `var<storage>`: `UNIFORM_TYPE_STORAGE_BUFFER`.
    StorageBuffer,
    /// A storage texture: `UNIFORM_TYPE_IMAGE`.
    Image,
}

/// One binding an entry point uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// Descriptor set (WGSL `@group`).
    pub set: u32,
    /// Binding within the set.
    pub binding: u32,
    /// The WGSL variable's name, which the backend maps to a resource.
    pub name: String,
    /// How Godot binds it.
    pub kind: BindingKind,
}

/// One compute entry point as SPIR-V.
#[derive(Debug, Clone)]
pub struct Program {
    /// Entry point name.
    pub entry_point: &'static str,
    /// SPIR-V words.
    pub words: Vec<u32>,
    /// The bindings the entry point uses, ordered by set and binding.
    pub bindings: Vec<Binding>,
    /// Workgroup size the entry point declares.
    pub workgroup_size: [u32; 3],
}

impl Program {
    /// SPIR-V as bytes, the form `RDShaderSPIRV` takes.
    pub fn bytes(&self) -> Vec<u8> {
        bytemuck::cast_slice(&self.words).to_vec()
    }

    /// The sets the entry point uses, ascending.
    pub fn sets(&self) -> Vec<u32> {
        let mut sets: Vec<u32> = self.bindings.iter().map(|b| b.set).collect();
        sets.dedup();
        sets
    }
}

/// The entry points the RenderingDevice backend runs besides the step ([`step_program`]), with
/// the pass family that holds each; they run with naga's bounds checks.
pub const ENTRY_POINTS: [(&str, shaders::Family, bool); 15] = [
    ("apply_water", shaders::EDITS, false),
    ("apply_terrain", shaders::EDITS, false),
    ("tile_images", shaders::SNAPSHOT, false),
    ("gather", shaders::SNAPSHOT, false),
    ("refresh_step_terrain", shaders::BODIES, false),
    ("displace", shaders::BODIES, false),
    ("nudge_pipes", shaders::BODIES, false),
    ("plan_frame_start", shaders::TILES, false),
    ("plan_next_step", shaders::TILES, false),
    ("report_awake_tiles", shaders::TILES, false),
    ("sum_tiles", shaders::SNAPSHOT, false),
    ("judge_cooling", shaders::COOLING, false),
    ("apply_cooling", shaders::COOLING, false),
    ("compare_tiles", shaders::TILE_CHANGES, false),
    ("overwrite_cells", shaders::OVERWRITE, false),
];

/// The step kernel (`step_columns.wgsl`) specialised for `mode` with `columns` invocations per
/// workgroup, as the wgpu backend runs it (trusted: see the SAFETY note of its module).
pub fn step_program(mode: StepMode, kernel: &ColumnKernel) -> Result<Program, String> {
    translate_with(shaders::STEP, "step_columns", true, &mode.overrides(kernel))
}

/// Translates entry point `entry_point` of `family`, its overridable constants at their defaults. `trusted` drops naga's bounds
/// checks and loop counters, as the wgpu backend does for the step kernel (see its SAFETY note:
/// every index it forms is checked against the grid first).
pub fn translate(family: shaders::Family, entry_point: &'static str, trusted: bool) -> Result<Program, String> {
    translate_with(family, entry_point, trusted, &[])
}

/// [`translate`] with the pipeline-overridable constants in `overrides` set (by name).
pub fn translate_with(family: shaders::Family, entry_point: &'static str, trusted: bool, overrides: &[(&str, f64)]) -> Result<Program, String> {
    let source = family.source();
    let mut module = naga::front::wgsl::parse_str(&source).map_err(|e| format!("{entry_point}: {}", e.emit_to_string(&source)))?;
    if !module.entry_points.iter().any(|e| e.name == entry_point) {
        return Err(format!("no entry point `{entry_point}` in its WGSL"));
    }
    module.entry_points.retain(|e| e.name == entry_point);
    naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
    // Godot's Vulkan driver creates every pipeline with the entry point `main`.
    module.entry_points[0].name = GODOT_ENTRY_POINT.to_string();
    let info = Validator::new(ValidationFlags::all(), Capabilities::default())
        .validate(&module)
        .map_err(|e| format!("{entry_point}: {}", e.emit_to_string(&source)))?;
    // SPIR-V for Godot has no specialisation constants: the overrides become constants here.
    let constants: naga::back::PipelineConstants = overrides.iter().map(|&(name, value)| (name.to_string(), value)).collect();
    let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants).map_err(|e| format!("{entry_point}: overrides: {e}"))?;
    let (module, info) = (module.into_owned(), info.into_owned());
    let checks = if trusted { BoundsCheckPolicy::Unchecked } else { BoundsCheckPolicy::Restrict };
    let options = spv::Options {
        // SPIR-V 1.0 runs on every Vulkan device Godot supports.
        lang_version: (1, 0),
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: BoundsCheckPolicies { index: checks, buffer: checks, image_load: checks, binding_array: checks },
        // The step kernels write every workgroup slot they read, as the wgpu backend relies on.
        zero_initialize_workgroup_memory: if trusted { spv::ZeroInitializeWorkgroupMemoryMode::None } else { spv::ZeroInitializeWorkgroupMemoryMode::Polyfill },
        force_loop_bounding: !trusted,
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: GODOT_ENTRY_POINT.to_string() };
    let words = spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("{entry_point}: SPIR-V: {e}"))?;
    let mut bindings: Vec<Binding> = module
        .global_variables
        .iter()
        .filter_map(|(_, var)| {
            let rb = var.binding.as_ref()?;
            let kind = match var.space {
                naga::AddressSpace::Uniform => BindingKind::UniformBuffer,
                naga::AddressSpace::Storage { .. } => BindingKind::StorageBuffer,
                naga::AddressSpace::Handle => BindingKind::Image,
                _ => return None,
            };
            Some(Binding { set: rb.group, binding: rb.binding, name: var.name.clone().unwrap_or_default(), kind })
        })
        .collect();
    bindings.sort_by_key(|b| (b.set, b.binding));
    let workgroup_size = module.entry_points[0].workgroup_size;
    Ok(Program { entry_point, words, bindings, workgroup_size })
}

/// Every entry point of [`ENTRY_POINTS`], translated.
pub fn all_programs() -> Result<Vec<Program>, String> {
    ENTRY_POINTS.iter().map(|&(name, family, trusted)| translate(family, name, trusted)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &Program) -> Vec<(u32, u32, &str)> {
        p.bindings.iter().map(|b| (b.set, b.binding, b.name.as_str())).collect()
    }

    #[test]
    fn every_rendering_device_entry_point_translates_to_spirv() {
        // The triangular lattice (bit 16) has its diagonals and never advects.
        let modes = (0..32).filter(|m| m & 16 == 0 || m & 4 == 0).map(|m| StepMode { eight_neighbours: m & 17 != 0, triangular: m & 16 != 0, depth_dependent: m & 2 != 0, advection: m & 4 != 0, edge_exchange: m & 8 != 0 });
        let steps: Vec<Program> = modes.map(|mode| step_program(mode, &ColumnKernel { columns: 128, per_invocation: 1, band_rows: None }).expect("the step translates in every mode")).collect();
        for p in all_programs().expect("translates").into_iter().chain(steps) {
            println!("{}: {} words, workgroup {:?}, bindings {:?}", p.entry_point, p.words.len(), p.workgroup_size, names(&p));
            assert_eq!(p.words[0], 0x0723_0203, "{}: SPIR-V magic number", p.entry_point);
            assert!(!p.bindings.is_empty());
        }
    }

    #[test]
    fn pruning_to_one_entry_point_leaves_only_its_bindings() {
        let images = translate(shaders::SNAPSHOT, "tile_images", false).unwrap();
        let gather = translate(shaders::SNAPSHOT, "gather", false).unwrap();
        println!("images {:?}\ngather {:?}", names(&images), names(&gather));
        // The wgpu-only texel buffers never reach a RenderingDevice shader.
        for p in [&images, &gather] {
            assert!(!p.bindings.iter().any(|b| b.name == "height_texels" || b.name == "flow_texels"), "{}", p.entry_point);
        }
        assert_eq!(images.sets(), vec![0, 1, 2]);
        assert!(images.bindings.iter().filter(|b| b.kind == BindingKind::Image).count() == 2);
        assert_eq!(gather.sets(), vec![0, 2]);
        assert!(!gather.bindings.iter().any(|b| b.name == "tile_stale" || b.name == "tile_totals"), "gather leaves the tiles' shares alone");
        let water = translate(shaders::EDITS, "apply_water", false).unwrap();
        let terrain = translate(shaders::EDITS, "apply_terrain", false).unwrap();
        println!("apply_water {:?}\napply_terrain {:?}", names(&water), names(&terrain));
        assert!(!water.bindings.iter().any(|b| b.name == "ground"));
        assert!(!terrain.bindings.iter().any(|b| b.name == "water"));
    }

    #[test]
    fn the_gather_tile_matches_the_backend_constant() {
        let gather = translate(shaders::SNAPSHOT, "gather", false).unwrap();
        println!("gather workgroup {:?}, GATHER_TILE {}", gather.workgroup_size, pipewater_core::backend::readback::GATHER_TILE);
        assert_eq!(gather.workgroup_size, [pipewater_core::backend::readback::GATHER_TILE, pipewater_core::backend::readback::GATHER_TILE, 1]);
    }

    #[test]
    fn every_program_enters_at_main_as_godot_expects() {
        let mode = StepMode { eight_neighbours: true, triangular: false, depth_dependent: true, advection: true, edge_exchange: false };
        let step = step_program(mode, &ColumnKernel { columns: 64, per_invocation: 1, band_rows: None }).unwrap();
        assert_eq!(step.workgroup_size, [64, 1, 1], "the COLUMNS override sets the workgroup size");
        let pairs = step_program(mode, &ColumnKernel { columns: 128, per_invocation: 2, band_rows: None }).unwrap();
        assert_eq!(pairs.workgroup_size, [64, 1, 1], "two columns per invocation halve it");
        for p in all_programs().unwrap().into_iter().chain([step]) {
            // OpEntryPoint: word count 4+ and opcode 15, then model, id, and the name as a
            // nul-terminated string.
            let mut at = 5;
            let mut name = None;
            while at < p.words.len() {
                let (count, opcode) = ((p.words[at] >> 16) as usize, p.words[at] & 0xffff);
                if opcode == 15 {
                    let bytes: Vec<u8> = p.words[at + 3..at + count].iter().flat_map(|w| w.to_le_bytes()).collect();
                    name = Some(String::from_utf8_lossy(&bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())]).into_owned());
                    break;
                }
                at += count.max(1);
            }
            println!("{}: SPIR-V entry point {name:?}", p.entry_point);
            assert_eq!(name.as_deref(), Some(GODOT_ENTRY_POINT));
        }
    }

    #[test]
    fn an_unknown_entry_point_is_an_error_not_a_panic() {
        let e = translate(shaders::SNAPSHOT, "no_such_pass", false).unwrap_err();
        println!("{e}");
        assert!(e.contains("no_such_pass"));
    }
}
