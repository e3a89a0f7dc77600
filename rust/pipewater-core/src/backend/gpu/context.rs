//! The one wgpu device of the process, and the pipelines every GPU simulation shares.

use super::shaders;
use crate::backend::limits::DeviceLimits;
use crate::backend::step_kernel::{ColumnKernel, StepMode};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Workgroup size of the edit passes (one invocation per edit).
pub const EDIT_WORKGROUP: u32 = 64;

/// Workgroup size of the sleeping tiles' plan (`tiles.wgsl`, one invocation per tile).
pub const TILES_WORKGROUP: u32 = 64;


/// Waits, at most `limit`, until `done` holds, polling `device` without blocking in it.
///
/// Why not `PollType::Wait`: wgpu-core 30 asserts, inside a blocking poll, that a queue it finds
/// empty has reached the submission it waited for, and another thread's poll (or submit, which
/// polls too) can empty the queue between the two reads (gfx-rs/wgpu#9958, fixed after 30.0.2).
/// Every simulation of the process shares one device and a save's worker waits on it from its
/// own thread, so a blocking poll could panic. A non-blocking poll asserts nothing; the sleep
/// between polls grows from 20 µs to 1 ms, so a short wait costs little and a long one no core.
pub fn poll_until(device: &wgpu::Device, limit: std::time::Duration, what: &str, done: impl Fn() -> bool) -> Result<()> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(20);
    loop {
        let _ = device.poll(wgpu::PollType::Poll);
        if done() {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(Error::DeviceLost(format!("{what} did not finish within {} s", limit.as_secs())));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(1));
    }
}

/// Waits, at most `limit`, until the device has finished everything submitted to `queue` so far
/// ([`poll_until`] says why this does not block in the device's poll).
pub fn wait_for_submitted(device: &wgpu::Device, queue: &wgpu::Queue, limit: std::time::Duration, what: &str) -> Result<()> {
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = finished.clone();
    queue.on_submitted_work_done(move || flag.store(true, std::sync::atomic::Ordering::Release));
    poll_until(device, limit, what, || finished.load(std::sync::atomic::Ordering::Acquire))
}

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
    /// The step kernel's workgroup shape on this device.
    pub kernel: ColumnKernel,
    /// Bind group layout of the step kernel.
    pub step_layout: wgpu::BindGroupLayout,
    /// The step kernel's module (`step_columns.wgsl`), from which a pipeline per mode is made.
    step_module: wgpu::ShaderModule,
    step_pipeline_layout: wgpu::PipelineLayout,
    /// The step kernel specialised for each mode met so far.
    step_pipelines: Mutex<HashMap<StepMode, Arc<wgpu::ComputePipeline>>>,
    /// The detail waves' pipelines, made when a simulation first turns the layer on: they belong
    /// to this device, and a fresh device after a loss makes its own.
    pub(super) detail_pipelines: std::sync::OnceLock<Result<Arc<super::detail::DetailPipelines>>>,
    /// The cooling passes' pipelines, made when a simulation first cools (`cooling.rs`).
    pub(super) cooling_pipelines: std::sync::OnceLock<Arc<super::cooling::CoolingPipelines>>,
    /// The comparison of a sync server's tiles (`tile_changes.rs`), made by its first capture.
    pub(super) tile_change_pipelines: std::sync::OnceLock<Arc<super::tile_changes::TileChangePipelines>>,
    /// The write of a sync client's cells (`overwrite.rs`), made by its first write.
    pub(super) overwrite_pipelines: std::sync::OnceLock<Arc<super::overwrite::OverwritePipelines>>,
    /// Bind group layout of the sleeping tiles' plan.
    pub tiles_layout: wgpu::BindGroupLayout,
    /// The plan of a frame's first step (`tiles.wgsl`).
    pub plan_frame_start: wgpu::ComputePipeline,
    /// The plan of a frame's later steps.
    pub plan_next_step: wgpu::ComputePipeline,
    /// The awake tiles of a frame's last step into its sleeping report.
    pub report_awake_tiles: wgpu::ComputePipeline,
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
    /// Bind group layout of the flow as the detail layer reads it: the snapshot's first four
    /// bindings (constants, terrain, depth, flux), all read only.
    pub detail_flow_layout: wgpu::BindGroupLayout,
    /// Bind group layout of the snapshot's sleeping tiles (group 2 of `tile_texels` and
    /// `sum_tiles`: tile parameters, stale marks, shares of the reductions).
    pub snapshot_tiles_layout: wgpu::BindGroupLayout,
    /// Snapshot texels and shares of the reductions of the stale tiles.
    pub tile_texels: wgpu::ComputePipeline,
    /// The reductions from the tiles' shares.
    pub sum_tiles: wgpu::ComputePipeline,
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
    /// limits and the step's workgroup counts; full reads go through one staging buffer.
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
            step_kernel: self.kernel,
        }
    }

    /// The step kernel specialised for `mode`, made on first use (a pipeline takes a few
    /// milliseconds to make; modes change rarely).
    pub fn step_pipeline(&self, mode: StepMode) -> Arc<wgpu::ComputePipeline> {
        self.step_pipelines
            .lock()
            .entry(mode)
            .or_insert_with(|| {
                let constants = mode.overrides(&self.kernel);
                Arc::new(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("step_columns"),
                    layout: Some(&self.step_pipeline_layout),
                    module: &self.step_module,
                    entry_point: Some("step_columns"),
                    compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, zero_initialize_workgroup_memory: false },
                    cache: None,
                }))
            })
            .clone()
    }

    /// Whether the adapter is a software rasteriser (Mesa's lavapipe or llvmpipe, SwiftShader,
    /// WARP): wgpu calls their device type `Cpu`.
    pub fn is_software(&self) -> bool {
        self.adapter.device_type == wgpu::DeviceType::Cpu
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
        // The one indirect dispatch, the step over the awake tiles, takes arguments tiles.wgsl
        // writes: a count of at most the grid's tiles, which `DeviceLimits::check` holds within
        // the device's workgroups per dimension before a backend is made, and y = z = 1 from the
        // host. wgpu's check of them adds a pass and a barrier to every step: about 5 µs, 4–7 %
        // of a 1024² step on an H100 (docs/BENCHMARKS.md).
        desc.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
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
        // `PIPEWATER_GPU_TIMESTAMPS=1`: timestamps between the frames' dispatches, for the
        // benchmarks (timing.rs); never asked for otherwise.
        let timestamps = super::timing::TIMESTAMP_FEATURES;
        let wants_timestamps = std::env::var("PIPEWATER_GPU_TIMESTAMPS").is_ok_and(|v| v == "1");
        let required_features = if wants_timestamps && adapter.features().contains(timestamps) { timestamps } else { wgpu::Features::empty() };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("pipewater"),
                required_features,
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
        let limits = device.limits();
        let kernel = ColumnKernel::for_limits(limits.max_compute_workgroup_storage_size, limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x)
            .ok_or_else(|| {
                Error::GpuUnavailable(format!(
                    "{} allows {} bytes of workgroup memory; the step needs at least {}",
                    adapter_info.name,
                    limits.max_compute_workgroup_storage_size,
                    crate::backend::step_kernel::workgroup_bytes_for(crate::backend::step_kernel::COLUMN_CHOICES[crate::backend::step_kernel::COLUMN_CHOICES.len() - 1])
                ))
            })?;

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
            &[
                uniform(0),
                storage(1, true),
                storage(2, true),
                storage(3, true),
                storage(4, false),
                storage(5, false),
                storage(6, false),
                uniform(7),
                storage(8, true),
                storage(9, false),
            ],
        );
        let tiles_layout = layout("tiles", &[uniform(0), uniform(1), storage(2, true), storage(3, false), storage(4, true), storage(5, false), storage(6, false), storage(7, false), storage(8, false)]);
        let edit_layout = layout("edits", &[storage(0, false), storage(1, false), storage(2, false), storage(3, true), storage(4, true)]);
        let bodies_layout = layout(
            "bodies",
            &[uniform(0), storage(1, true), storage(2, false), storage(3, false), storage(4, true), storage(5, false), storage(6, true), storage(7, true), storage(8, true)],
        );
        let snapshot_layout =
            layout("snapshot", &[uniform(0), storage(1, true), storage(2, true), storage(3, true), storage(4, false), storage(5, false), storage(6, false)]);
        let detail_flow_layout = layout("detail flow", &[uniform(0), storage(1, true), storage(2, true), storage(3, true)]);
        let gather_layout = layout("gather", &[storage(0, true), storage(1, false), storage(2, false)]);
        let snapshot_tiles_layout = layout("snapshot tiles", &[uniform(3), storage(4, false), storage(5, false)]);

        let module = |family: shaders::Family| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(family.file()),
                source: wgpu::ShaderSource::Wgsl(family.source().into()),
            })
        };
        // The step kernel runs without naga's injected bounds checks and loop counters (see
        // docs/BENCHMARKS.md for what they cost): every index it forms is a grid cell checked
        // against the grid's size or a workgroup-memory slot of a fixed ring, and every loop is
        // bounded. `PIPEWATER_GPU_CHECKED=1` keeps the checks for debugging.
        let checked = std::env::var("PIPEWATER_GPU_CHECKED").is_ok_and(|v| v == "1");
        // A build with the `shader-overrides` feature may build the step from another WGSL file
        // (with the step family's shared fragments in front), with the same bindings and entry
        // point: kernel variants compared in one benchmark run ([`super::overrides`]).
        let step_source = match super::overrides::wgsl(super::overrides::STEP_WGSL)? {
            Some(variant) => shaders::STEP.source_with(&variant),
            None => shaders::STEP.source(),
        };
        let step_desc = wgpu::ShaderModuleDescriptor { label: Some(shaders::STEP.file()), source: wgpu::ShaderSource::Wgsl(step_source.into()) };
        let step_module = if checked {
            device.create_shader_module(step_desc)
        } else {
            // SAFETY: the step kernel indexes storage buffers only at cells inside the grid (every
            // cell is tested with `cell_in_grid` first) and workgroup arrays only inside their
            // rings (slot `& 3`, `& 1` or the only one, plane 0 ..= 2 of the flux ring, each row
            // ROW = COLUMNS + 2 columns, a neighbour's column one from an invocation's own, which
            // lies in 1 ..= COLUMNS; a mode's rings of no rows are read only in code it does not
            // compile); its loops have fixed bounds or run over the band's rows. The buffers are
            // sized for the grid in `GpuBackend::new`.
            unsafe { device.create_shader_module_trusted(step_desc, wgpu::ShaderRuntimeChecks::unchecked()) }
        };
        let edit_module = module(shaders::EDITS);
        let snapshot_module = module(shaders::SNAPSHOT);
        let bodies_module = module(shaders::BODIES);
        let tiles_module = module(shaders::TILES);
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
        let step_pipeline_layout =
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("step"), bind_group_layouts: &[Some(&step_layout)], immediate_size: 0 });
        let apply_water = pipeline("apply_water", &edit_layout, &edit_module, "apply_water", &[]);
        let apply_terrain = pipeline("apply_terrain", &edit_layout, &edit_module, "apply_terrain", &[]);
        let refresh_step_terrain = pipeline("refresh_step_terrain", &bodies_layout, &bodies_module, "refresh_step_terrain", &[]);
        let displace = pipeline("displace", &bodies_layout, &bodies_module, "displace", &[]);
        let nudge_pipes = pipeline("nudge_pipes", &bodies_layout, &bodies_module, "nudge_pipes", &[]);
        let plan_frame_start = pipeline("plan_frame_start", &tiles_layout, &tiles_module, "plan_frame_start", &[]);
        let plan_next_step = pipeline("plan_next_step", &tiles_layout, &tiles_module, "plan_next_step", &[]);
        let report_awake_tiles = pipeline("report_awake_tiles", &tiles_layout, &tiles_module, "report_awake_tiles", &[]);
        // The snapshot's entry points read its group 0 and their own group 2; group 1 (the
        // storage textures of `tile_images`) is the RenderingDevice backend's only.
        let snapshot_pipeline = |entry: &str, group_2: &wgpu::BindGroupLayout| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some(entry),
                    bind_group_layouts: &[Some(&snapshot_layout), None, Some(group_2)],
                    immediate_size: 0,
                })),
                module: &snapshot_module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            })
        };
        let tile_texels = snapshot_pipeline("tile_texels", &snapshot_tiles_layout);
        let sum_tiles = snapshot_pipeline("sum_tiles", &snapshot_tiles_layout);
        let gather = snapshot_pipeline("gather", &gather_layout);
        let ctx = GpuContext {
            device,
            queue,
            adapter: adapter_info,
            limits,
            kernel,
            step_pipeline_layout,
            step_layout,
            step_module,
            step_pipelines: Mutex::new(HashMap::new()),
            detail_pipelines: std::sync::OnceLock::new(),
            cooling_pipelines: std::sync::OnceLock::new(),
            tile_change_pipelines: std::sync::OnceLock::new(),
            overwrite_pipelines: std::sync::OnceLock::new(),
            tiles_layout,
            plan_frame_start,
            plan_next_step,
            report_awake_tiles,
            edit_layout,
            apply_water,
            apply_terrain,
            bodies_layout,
            refresh_step_terrain,
            displace,
            nudge_pipes,
            snapshot_layout,
            detail_flow_layout,
            snapshot_tiles_layout,
            tile_texels,
            sum_tiles,
            gather_layout,
            gather,
            error,
            lost,
        };
        ctx.check().map_err(|e| Error::GpuUnavailable(format!("shaders failed to build on {}: {e}", ctx.adapter.name)))?;
        Ok(ctx)
    }
}

