//! GPU benchmark: cell-steps per second of the wgpu backend across grid sizes, next to the
//! device's own copy bandwidth measured with wgpu, so the step's share of DRAM bandwidth can be
//! stated. Prints Markdown rows for docs/BENCHMARKS.md.
//!
//! `cargo run --release -p pipewater-core --example gpu_bench -- [--sizes 512,1024] [--seconds 2]
//! [--steps 200] [--four] [--no-advection] [--current U] [--no-sleep]`: `--current` starts every
//! wet cell moving at `(U, U/2)` m/s, so that every pipe advects. Sleeping tiles are on unless
//! `--no-sleep`; cell-steps/s is always the grid's cells × steps over the time, whatever slept,
//! and the last column says which share of them the last frame really stepped (water at rest
//! sleeps: give it a `--current` to time every cell). `PIPEWATER_GPU_COLUMNS` and
//! `PIPEWATER_GPU_BAND_ROWS` shape the step kernel, `PIPEWATER_GPU_STEP_WGSL` replaces it (kernel
//! experiments, in a build with `--features shader-overrides`; `--timing-only` skips the check of
//! the water they leave).

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("gpu_bench needs the `gpu` feature");
}

#[cfg(feature = "gpu")]
mod bench {
    use pipewater_core::backend::gpu::{GpuBackend, GpuContext};
    use pipewater_core::backend::step_kernel::BYTES_PER_CELL_STEP;
    use pipewater_core::backend::{Backend, FramePlan};
    use pipewater_core::pipes::StepConstants;
    use pipewater_core::{scenarios, Grid, NeighbourMode, Params};
    use std::time::Instant;

    fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
    }

    /// Device-to-device copy bandwidth, bytes/s (read + write), from `reps` copies of `bytes`
    /// recorded into one submission.
    fn copy_bandwidth(ctx: &GpuContext, bytes: u64, reps: u32) -> f64 {
        let make = |label| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let (a, b) = (make("copy a"), make("copy b"));
        let run = |reps: u32| {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            for r in 0..reps {
                let (src, dst) = if r % 2 == 0 { (&a, &b) } else { (&b, &a) };
                encoder.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
            }
            let t = Instant::now();
            ctx.queue.submit([encoder.finish()]);
            ctx.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).expect("poll");
            t.elapsed().as_secs_f64()
        };
        run(2);
        let seconds = run(reps);
        2.0 * bytes as f64 * reps as f64 / seconds
    }

    /// A streaming copy in a compute shader: what a kernel that reads and writes each byte once
    /// can reach, the practical DRAM ceiling for the step.
    const STREAM_COPY: &str = "
        @group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
        @group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
        @compute @workgroup_size(256)
        fn copy(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
            let i = g.x + g.y * n.x * 256u;
            if i < arrayLength(&dst) { dst[i] = src[i]; }
        }";

    /// Bandwidth of [`STREAM_COPY`], bytes/s (read + write), over `bytes`-sized buffers.
    fn shader_copy_bandwidth(ctx: &GpuContext, bytes: u64, reps: u32) -> f64 {
        let device = &ctx.device;
        let make = |label| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false })
        };
        let (a, b) = (make("stream a"), make("stream b"));
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("stream copy"), source: wgpu::ShaderSource::Wgsl(STREAM_COPY.into()) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("stream copy"),
            layout: None,
            module: &module,
            entry_point: Some("copy"),
            compilation_options: Default::default(),
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        let group = |s: &wgpu::Buffer, d: &wgpu::Buffer| {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &layout,
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: s.as_entire_binding() }, wgpu::BindGroupEntry { binding: 1, resource: d.as_entire_binding() }],
            })
        };
        let groups = [group(&a, &b), group(&b, &a)];
        let workgroups = (bytes / 16).div_ceil(256) as u32;
        let (gx, gy) = (workgroups.min(32768), workgroups.div_ceil(32768));
        let run = |reps: u32| {
            let mut encoder = device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                for r in 0..reps {
                    pass.set_bind_group(0, &groups[r as usize % 2], &[]);
                    pass.dispatch_workgroups(gx, gy, 1);
                }
            }
            let t = Instant::now();
            ctx.queue.submit([encoder.finish()]);
            device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).expect("poll");
            t.elapsed().as_secs_f64()
        };
        run(2);
        2.0 * bytes as f64 * reps as f64 / run(reps)
    }

    /// Cell-steps per second on a `side²` grid: frames of `steps` substeps until `seconds` passed.
    /// Also returns the share of the grid's cells the last frame stepped and the host's time in
    /// `advance` per frame (median and longest, ms): where the host records slower than the
    /// device runs, the figure is the host's.
    fn measure(side: u32, params: Params, current: f32, steps: u32, seconds: f64, check: bool, sleeping: bool) -> Result<(f64, f64, f64, [f64; 2]), String> {
        let grid = Grid::new(side, side, 1.0).map_err(|e| e.to_string())?;
        let mut state = scenarios::benchmark_lake(grid);
        if current != 0.0 {
            state.set_velocity(&params, |_, _| [current, 0.5 * current]);
        }
        let constants = StepConstants::new(&params, side, side, 1.0, 0.02, [0; 4]);
        let mut gpu = GpuBackend::new(&state).map_err(|e| e.to_string())?;
        gpu.set_sleeping(sleeping);
        let plan = FramePlan { constants, substeps: steps, forcing: &[] };
        gpu.advance(&plan).map_err(|e| e.to_string())?;
        gpu.wait_idle().map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut total = 0u64;
        let mut host_ms = Vec::with_capacity(4096);
        while start.elapsed().as_secs_f64() < seconds || total < 2 * steps as u64 {
            let frame = Instant::now();
            gpu.advance(&plan).map_err(|e| e.to_string())?;
            host_ms.push(frame.elapsed().as_secs_f64() * 1e3);
            total += steps as u64;
        }
        host_ms.sort_by(f64::total_cmp);
        let host = [host_ms[host_ms.len() / 2], host_ms[host_ms.len() - 1]];
        gpu.wait_idle().map_err(|e| e.to_string())?;
        let elapsed = start.elapsed().as_secs_f64();
        let after = gpu.read_state().map_err(|e| e.to_string())?;
        if check && after.depth.iter().any(|&d| d < 0) {
            return Err("negative depth".into());
        }
        // The sleeping report arrives with a snapshot: read the last frame's.
        gpu.sync().map_err(|e| e.to_string())?;
        let stepped = gpu.sleep_report().map_or(1.0, |r| r.cells_stepped as f64 / (grid.cell_count() as f64 * steps as f64));
        Ok((total as f64 * grid.cell_count() as f64 / elapsed, elapsed * 1e3 / total as f64, stepped, host))
    }

    pub fn main() {
        if let Err(why) = pipewater_core::backend::gpu::overrides::check_requested() {
            eprintln!("gpu_bench: {why}");
            std::process::exit(2);
        }
        let args: Vec<String> = std::env::args().collect();
        let sizes: Vec<u32> = arg::<String>(&args, "--sizes")
            .map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect())
            .unwrap_or_else(|| vec![512, 1024, 2048, 4096]);
        let seconds: f64 = arg(&args, "--seconds").unwrap_or(2.0);
        let steps: u32 = arg(&args, "--steps").unwrap_or(200);
        let copy_mib: u64 = arg(&args, "--copy-mib").unwrap_or(512);
        let mode = if args.iter().any(|a| a == "--four") { NeighbourMode::Four } else { NeighbourMode::Eight };
        let momentum_advection = !args.iter().any(|a| a == "--no-advection");
        let current: f32 = arg(&args, "--current").unwrap_or(0.0);
        // `--timing-only`: kernel experiments that compute nothing meaningful are timed without
        // checking the water they leave.
        let check = !args.iter().any(|a| a == "--timing-only");
        let sleeping = !args.iter().any(|a| a == "--no-sleep");
        let params = Params { neighbours: mode, momentum_advection, ..Params::default() };
        let ctx = match GpuContext::shared() {
            Ok(ctx) => ctx,
            Err(e) => {
                eprintln!("gpu_bench: {e}");
                std::process::exit(2);
            }
        };
        println!("adapter: {}", ctx.adapter_description());
        println!("step kernel: {} columns per workgroup, {} per invocation, bands of {:?} rows (None: chosen per grid)", ctx.kernel.columns, ctx.kernel.per_invocation, ctx.kernel.band_rows);
        let bandwidth = copy_bandwidth(&ctx, copy_mib << 20, 20);
        println!("device-to-device copy_buffer_to_buffer: {:.1} GB/s (read + write, {copy_mib} MiB buffers)", bandwidth / 1e9);
        let copy_bytes = (copy_mib << 20).min(ctx.limits.max_storage_buffer_binding_size as u64) / 16 * 16;
        let stream = shader_copy_bandwidth(&ctx, copy_bytes, 20);
        println!("compute-shader stream copy: {:.1} GB/s (read + write, {} MiB buffers)", stream / 1e9, copy_bytes >> 20);
        let bandwidth = bandwidth.max(stream);
        println!("bytes per cell-step (model): {BYTES_PER_CELL_STEP}");
        println!();
        println!("momentum advection: {}, initial current: {current} m/s, sleeping tiles: {}", if momentum_advection { "on" } else { "off" }, if sleeping { "on" } else { "off" });
        println!("| grid | neighbours | advection | G cell-steps/s | ms/step | effective GB/s | of measured copy bandwidth | cells stepped (last frame) | host ms in advance (median / max) |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for side in sizes {
            match measure(side, params, current, steps, seconds, check, sleeping) {
                Ok((rate, ms, stepped, host)) => {
                    let bytes = rate * BYTES_PER_CELL_STEP as f64;
                    println!(
                        "| {side}² | {} | {} | {:.3} | {:.4} | {:.0} | {:.0}% | {:.1}% | {:.2} / {:.2} |",
                        if mode == NeighbourMode::Eight { 8 } else { 4 },
                        if momentum_advection { "on" } else { "off" },
                        rate / 1e9,
                        ms,
                        bytes / 1e9,
                        100.0 * bytes / bandwidth,
                        100.0 * stepped,
                        host[0],
                        host[1]
                    );
                }
                Err(e) => println!("| {side}² | – | – | failed: {e} | | | | | |"),
            }
        }
    }

}

#[cfg(feature = "gpu")]
fn main() {
    bench::main();
}
