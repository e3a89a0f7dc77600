//! The one wgpu device of the process, and the pipelines every GPU simulation shares.

use super::shaders;
use crate::backend::limits::DeviceLimits;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::Arc;

/// Workgroup shape of the step passes, cells along x and y.
///
/// 32 × 8: a warp covers 32 consecutive cells of one row, so each load of a field is one
/// contiguous segment, and the 8 rows give the neighbour reads of the rows above and below
/// a good chance to hit the cache. `PIPEWATER_GPU_WORKGROUP=XxY` overrides it (benchmarks).
pub const DEFAULT_WORKGROUP: [u32; 2] = [32, 8];

/// Workgroup size of the edit passes (one invocation per edit).
pub const EDIT_WORKGROUP: u32 = 64;

/// Tile of the fused step (`shaders/step_tiled.wgsl`), cells along x and y; must match its
/// `TILE_X` and `TILE_Y` (`ROWS` cells per invocation; 1 measured fastest).
pub const TILE: [u32; 2] = [32, 8];

/// Invocations per workgroup of the fused step.
pub const TILED_INVOCATIONS: u32 = 32 * 8;

/// Workgroup memory the fused step needs, bytes: the tile and a two-cell halo of terrain,
/// depth, pipes, limit factors and (for advection) cell discharges: 15 552 bytes, under the
/// 16 KiB every Vulkan device and WebGPU's defaults allow.
pub const TILED_WORKGROUP_BYTES: u32 = (TILE[0] + 4) * (TILE[1] + 4) * (4 + 4 + 16 + 4 + 8);

/// Which step kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKernel {
    /// One pass per step over tiles in workgroup memory (`step_tiled.wgsl`); the default.
    Tiled,
    /// Two passes per step, accelerate + limit then transfer (`step.wgsl`): the reference GPU
    /// path, chosen with `PIPEWATER_GPU_KERNEL=two-pass` or where workgroup memory is short.
    TwoPass,
}

impl StepKernel {
    /// Device memory traffic of one cell-step, bytes, each field element counted once per pass
    /// that reads or writes it (neighbour and halo reads served by the caches):
    ///
    /// * two passes: accelerate_limit reads terrain 4 + depth 4 + flux 16 and writes
    ///   accelerated 16 + limit 4; transfer reads depth 4 + accelerated 16 + limit 4 and writes
    ///   depth 4 + flux 16: 88 bytes;
    /// * tiled: reads terrain 4 + depth 4 + flux 16, writes depth 4 + flux 16: 44 bytes.
    pub fn bytes_per_cell_step(self) -> u32 {
        match self {
            StepKernel::Tiled => 44,
            StepKernel::TwoPass => 88,
        }
    }
}

/// Side of the square workgroup of the snapshot pass.
pub const SNAPSHOT_WORKGROUP: u32 = 16;

/// The shared device, its queue, and the compiled pipelines.
pub struct GpuContext {
    /// The device every simulation of the process runs on.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// Adapter name, backend and driver, for descriptions and benchmark records.
    pub adapter: wgpu::AdapterInfo,
    /// Limits the device was created with.
    pub limits: wgpu::Limits,
    /// Workgroup shape of the step passes.
    pub workgroup: [u32; 2],
    /// Bind group layout of the step passes.
    pub step_layout: wgpu::BindGroupLayout,
    /// The step kernel in use.
    pub kernel: StepKernel,
    /// Bind group layout of the fused step.
    pub tiled_layout: wgpu::BindGroupLayout,
    /// The fused step.
    pub step_tiled: wgpu::ComputePipeline,
    /// Phase 1 + 2.
    pub accelerate_limit: wgpu::ComputePipeline,
    /// Phase 3.
    pub transfer: wgpu::ComputePipeline,
    /// Bind group layout of the edit passes.
    pub edit_layout: wgpu::BindGroupLayout,
    /// Water edits, sources and drains.
    pub apply_water: wgpu::ComputePipeline,
    /// Terrain edits.
    pub apply_terrain: wgpu::ComputePipeline,
    /// Bind group layout of the body passes.
    pub bodies_layout: wgpu::BindGroupLayout,
    /// The step's bed follows edited terrain.
    pub refresh_step_terrain: wgpu::ComputePipeline,
    /// Displacement of bodies.
    pub displace: wgpu::ComputePipeline,
    /// Drag of bodies and pushes on the pipes.
    pub nudge_pipes: wgpu::ComputePipeline,
    /// Bind group layout of the snapshot pass.
    pub snapshot_layout: wgpu::BindGroupLayout,
    /// Snapshot texels and reductions.
    pub texels: wgpu::ComputePipeline,
    /// Bind group layout of the gathered tiles (group 2 of `gather`, with the snapshot's group 0).
    pub gather_layout: wgpu::BindGroupLayout,
    /// The texels of listed tiles behind the header, for queries (`snapshot.wgsl` `gather`).
    pub gather: wgpu::ComputePipeline,
    /// First error the device reported outside a call (validation, out of memory).
    pub error: Arc<Mutex<Option<String>>>,
    /// Why the device was lost, once it was (its lost callback ran).
    pub lost: Arc<Mutex<Option<String>>>,
}

/// The context of the process: the one in use, or why there is none.
static CONTEXT: Mutex<Option<std::result::Result<Arc<GpuContext>, Error>>> = Mutex::new(None);

impl GpuContext {
    /// The process-wide context, created on first use. Without a usable adapter every call
    /// returns the same [`Error::GpuUnavailable`], which says what was tried. Once its device is
    /// lost or has reported an error, the next call creates a fresh device (the simulations
    /// still on the old one keep it until they move off it).
    pub fn shared() -> Result<Arc<GpuContext>> {
        let mut context = CONTEXT.lock();
        match &*context {
            Some(Ok(ctx)) if ctx.check().is_ok() => return Ok(ctx.clone()),
            Some(Err(why)) => return Err(why.clone()),
            _ => {}
        }
        let created = pollster::block_on(GpuContext::create()).map(Arc::new);
        *context = Some(created.clone());
        created
    }

    /// Fails with [`Error::DeviceLost`] once the device is lost, else with the device's first
    /// uncaptured error, if one occurred.
    pub fn check(&self) -> Result<()> {
        if let Some(why) = self.lost.lock().clone() {
            return Err(Error::DeviceLost(why));
        }
        match self.error.lock().clone() {
            Some(e) => Err(Error::Gpu(e)),
            None => Ok(()),
        }
    }

    /// What the device allows, for [`DeviceLimits::check`]: its storage binding and buffer
    /// limits, the step's workgroup counts; full reads go through one staging buffer.
    pub fn device_limits(&self) -> DeviceLimits {
        let l = &self.limits;
        let groups = l.max_compute_workgroups_per_dimension;
        DeviceLimits {
            device: self.adapter.name.clone(),
            max_storage_binding: l.max_storage_buffer_binding_size,
            max_buffer: l.max_buffer_size,
            full_reads: true,
            max_texture_side: u32::MAX,
            max_workgroups: [groups, groups],
            step_tile: match self.kernel {
                StepKernel::Tiled => TILE,
                StepKernel::TwoPass => self.workgroup,
            },
        }
    }

    /// "name (device type, backend, driver info)".
    pub fn adapter_description(&self) -> String {
        let a = &self.adapter;
        format!("{} ({:?}, {:?}, {} {})", a.name, a.device_type, a.backend, a.driver, a.driver_info).trim_end().to_string()
    }

    async fn create() -> Result<GpuContext> {
        let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                apply_limit_buckets: false,
            })
            .await
            .map_err(|e| {
                Error::GpuUnavailable(format!(
                    "no wgpu adapter on backends {backends:?} ({e}); install a GPU driver with Vulkan support \
                     (or Mesa's software Vulkan, package mesa-vulkan-drivers), or use the CPU backend"
                ))
            })?;
        let adapter_info = adapter.get_info();
        // Ask for everything the adapter offers: large grids need storage bindings beyond the
        // WebGPU defaults (a 4096² flux field is 256 MiB).
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("pipewater"),
                required_features: wgpu::Features::empty(),
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::GpuUnavailable(format!("adapter {} refused a device: {e}", adapter_info.name)))?;
        let error = Arc::new(Mutex::new(None::<String>));
        let sink = error.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut slot = sink.lock();
            if slot.is_none() {
                *slot = Some(e.to_string());
            }
        }));
        let lost = Arc::new(Mutex::new(None::<String>));
        let lost_sink = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            let why = match reason {
                wgpu::DeviceLostReason::Destroyed => format!("the device was destroyed {message}"),
                wgpu::DeviceLostReason::Unknown => format!("the driver lost the device ({message})"),
            };
            lost_sink.lock().get_or_insert(why.trim_end().to_string());
        });
        let workgroup = workgroup_from_env().unwrap_or(DEFAULT_WORKGROUP);
        let limits = device.limits();
        if workgroup[0] * workgroup[1] > limits.max_compute_invocations_per_workgroup {
            return Err(Error::GpuUnavailable(format!("workgroup {workgroup:?} exceeds the adapter's limit")));
        }

        let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only }, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let uniform = |binding: u32| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let layout = |label: &str, entries: &[wgpu::BindGroupLayoutEntry]| {
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries })
        };
        let step_layout = layout(
            "step",
            &[uniform(0), storage(1, true), storage(2, false), storage(3, false), storage(4, false), storage(5, false), storage(6, false)],
        );
        let tiled_layout = layout(
            "step tiled",
            &[uniform(0), storage(1, true), storage(2, true), storage(3, true), storage(4, false), storage(5, false), storage(6, false)],
        );
        let edit_layout = layout("edits", &[storage(0, false), storage(1, false), storage(2, false), storage(3, true), storage(4, true)]);
        let bodies_layout = layout(
            "bodies",
            &[uniform(0), storage(1, true), storage(2, false), storage(3, false), storage(4, true), storage(5, false), storage(6, true), storage(7, true), storage(8, true)],
        );
        let snapshot_layout =
            layout("snapshot", &[uniform(0), storage(1, true), storage(2, true), storage(3, true), storage(4, false), storage(5, false), storage(6, false)]);
        let gather_layout = layout("gather", &[storage(0, true), storage(1, false), storage(2, false)]);

        let module = |label: &str, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(shaders::with_common(source).into()),
            })
        };
        // The step kernels run without naga's injected bounds checks and loop counters (see
        // docs/BENCHMARKS.md for what they cost): every index they form is a grid cell checked against the
        // grid's size (or a workgroup-memory slot of a fixed region), and every loop is bounded. `PIPEWATER_GPU_CHECKED=1` keeps the checks for debugging.
        let checked = std::env::var("PIPEWATER_GPU_CHECKED").is_ok_and(|v| v == "1");
        let trusted = |label: &str, source: &str| {
            let desc = wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(shaders::with_common(source).into()) };
            if checked {
                device.create_shader_module(desc)
            } else {
                // SAFETY: the step shaders index storage buffers only at cells inside the grid
                // (every neighbour is tested with `cell_in_grid` first) and workgroup arrays
                // only inside their fixed region; every loop has a small fixed bound. The
                // buffers are sized for the grid in `GpuBackend::new`.
                unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
            }
        };
        let step_module = trusted("step.wgsl", shaders::STEP);
        let tiled_module = trusted("step_tiled.wgsl", shaders::STEP_TILED);
        let edit_module = module("edits.wgsl", shaders::EDITS);
        let snapshot_module = module("snapshot.wgsl", shaders::SNAPSHOT);
        let bodies_module = module("bodies.wgsl", shaders::BODIES);
        let wg_constants = [("WG_X", workgroup[0] as f64), ("WG_Y", workgroup[1] as f64)];
        let pipeline = |label: &str, bgl: &wgpu::BindGroupLayout, module: &wgpu::ShaderModule, entry: &str, constants: &[(&str, f64)]| {
            let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(bgl)],
                immediate_size: 0,
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: Some(&layout),
                module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions { constants, zero_initialize_workgroup_memory: false },
                cache: None,
            })
        };
        let accelerate_limit = pipeline("accelerate_limit", &step_layout, &step_module, "accelerate_limit", &wg_constants);
        let transfer = pipeline("transfer", &step_layout, &step_module, "transfer", &wg_constants);
        let step_tiled = pipeline("step_tiled", &tiled_layout, &tiled_module, "step_tiled", &[]);
        let tiled_fits = limits.max_compute_workgroup_storage_size >= TILED_WORKGROUP_BYTES
            && limits.max_compute_invocations_per_workgroup >= TILED_INVOCATIONS
            && limits.max_compute_workgroup_size_x >= TILE[0];
        let two_pass_asked = std::env::var("PIPEWATER_GPU_KERNEL").is_ok_and(|v| v == "two-pass");
        let kernel = if tiled_fits && !two_pass_asked { StepKernel::Tiled } else { StepKernel::TwoPass };
        let apply_water = pipeline("apply_water", &edit_layout, &edit_module, "apply_water", &[]);
        let apply_terrain = pipeline("apply_terrain", &edit_layout, &edit_module, "apply_terrain", &[]);
        let refresh_step_terrain = pipeline("refresh_step_terrain", &bodies_layout, &bodies_module, "refresh_step_terrain", &[]);
        let displace = pipeline("displace", &bodies_layout, &bodies_module, "displace", &[]);
        let nudge_pipes = pipeline("nudge_pipes", &bodies_layout, &bodies_module, "nudge_pipes", &[]);
        let texels = pipeline("texels", &snapshot_layout, &snapshot_module, "texels", &[]);
        // `gather` reads the snapshot's group 0 and its tiles in group 2; group 1 (the storage
        // textures of `images`) is the RenderingDevice backend's only.
        let gather = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("gather"),
            layout: Some(&device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("gather"),
                bind_group_layouts: &[Some(&snapshot_layout), None, Some(&gather_layout)],
                immediate_size: 0,
            })),
            module: &snapshot_module,
            entry_point: Some("gather"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        let ctx = GpuContext {
            device,
            queue,
            adapter: adapter_info,
            limits,
            workgroup,
            kernel,
            tiled_layout,
            step_tiled,
            step_layout,
            accelerate_limit,
            transfer,
            edit_layout,
            apply_water,
            apply_terrain,
            bodies_layout,
            refresh_step_terrain,
            displace,
            nudge_pipes,
            snapshot_layout,
            texels,
            gather_layout,
            gather,
            error,
            lost,
        };
        ctx.check().map_err(|e| Error::GpuUnavailable(format!("shaders failed to build on {}: {e}", ctx.adapter.name)))?;
        Ok(ctx)
    }
}

/// `PIPEWATER_GPU_WORKGROUP=XxY`, when set and well formed.
fn workgroup_from_env() -> Option<[u32; 2]> {
    let v = std::env::var("PIPEWATER_GPU_WORKGROUP").ok()?;
    let (x, y) = v.split_once('x')?;
    let (x, y) = (x.trim().parse().ok()?, y.trim().parse().ok()?);
    (x > 0 && y > 0).then_some([x, y])
}
