//! What a Vulkan driver's compiler makes of the step kernel: registers, workgroup memory,
//! instruction counts and whatever else it reports through `VK_KHR_pipeline_executable_properties`
//! (NVIDIA reports registers, which bound how many workgroups share a multiprocessor). The
//! kernel is specialised for each mode as the wgpu backend specialises it (naga applies the
//! overrides) and built without bounds checks, as the backend builds it.
//!
//! `cargo run --release -p pipewater-core --example step_kernel_stats -- [--columns 128,64]
//! [--device NAME] [--dump DIR] [--world TILE_ROWS]`: `--dump` writes the driver's internal
//! representations (where it offers any) and each pipeline's cache data (the driver's binary) into
//! DIR; `--world` reports the step of a world in pages (`shaders::WORLD_STEP`, pages of the
//! strip's own columns cut into tiles of TILE_ROWS rows), with and without `FOCUS_HOLDS`.

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("step_kernel_stats needs the `gpu` feature");
}

#[cfg(feature = "gpu")]
fn main() {
    if let Err(e) = stats::main() {
        eprintln!("step_kernel_stats: {e}");
        std::process::exit(2);
    }
}

#[cfg(feature = "gpu")]
mod stats {
    use ash::vk;
    use pipewater_core::backend::gpu::shaders;
    use pipewater_core::backend::step_kernel::{ColumnKernel, StepMode, COLUMN_HALO};
    use std::ffi::CStr;

    fn arg(args: &[String], name: &str) -> Option<String> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
    }

    /// The step kernel's WGSL, parsed (from `PIPEWATER_GPU_STEP_WGSL` when set, as the backend
    /// does).
    fn step_module(world: bool) -> Result<(naga::Module, String), String> {
        let family = if world { shaders::WORLD_STEP } else { shaders::STEP };
        let source = match std::env::var("PIPEWATER_GPU_STEP_WGSL") {
            Ok(path) => family.source_with(&std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?),
            Err(_) => family.source(),
        };
        let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
        Ok((module, source))
    }

    /// The step's bindings as the kernel declares them, (group, binding, type), so that the
    /// layout follows the WGSL.
    fn step_bindings(world: bool) -> Result<Vec<(u32, u32, vk::DescriptorType)>, String> {
        let (module, _) = step_module(world)?;
        let mut bindings: Vec<_> = module
            .global_variables
            .iter()
            .filter_map(|(_, var)| {
                let binding = var.binding.as_ref()?;
                match var.space {
                    naga::AddressSpace::Uniform => Some((binding.group, binding.binding, vk::DescriptorType::UNIFORM_BUFFER)),
                    naga::AddressSpace::Storage { .. } => Some((binding.group, binding.binding, vk::DescriptorType::STORAGE_BUFFER)),
                    _ => None,
                }
            })
            .collect();
        bindings.sort_by_key(|&(group, binding, _)| (group, binding));
        Ok(bindings)
    }

    /// The step kernel as SPIR-V for `mode` and `columns`; with `world` (tile rows, focus holds)
    /// the world's step, specialised as world.rs specialises it.
    fn spirv(mode: StepMode, columns: u32, per_invocation: u32, world: Option<(u32, bool)>) -> Result<Vec<u32>, String> {
        let (module, source) = step_module(world.is_some())?;
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
            .validate(&module)
            .map_err(|e| e.emit_to_string(&source))?;
        let mut constants: naga::back::PipelineConstants = mode.overrides(&ColumnKernel { columns, per_invocation, band_rows: None }).iter().map(|&(k, v)| (k.to_string(), v)).collect();
        if let Some((tile_rows, holds)) = world {
            let side = columns - 2 * COLUMN_HALO;
            constants.insert("PAGE_SIDE".into(), side as f64);
            constants.insert("TILE_ROWS".into(), tile_rows as f64);
            constants.insert("FOCUS_HOLDS".into(), if holds { 1.0 } else { 0.0 });
        }
        let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants).map_err(|e| e.to_string())?;
        let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
        let options = naga::back::spv::Options {
            lang_version: (1, 3),
            bounds_check_policies: naga::proc::BoundsCheckPolicies { index: unchecked, buffer: unchecked, image_load: unchecked, binding_array: unchecked },
            zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
            force_loop_bounding: false,
            ..Default::default()
        };
        let pipeline = naga::back::spv::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: "step_columns".into() };
        naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())
    }

    fn text(chars: &[std::ffi::c_char]) -> String {
        // SAFETY: Vulkan fills these fixed arrays with nul-terminated strings.
        unsafe { CStr::from_ptr(chars.as_ptr()) }.to_string_lossy().into_owned()
    }

    pub fn main() -> Result<(), String> {
        let args: Vec<String> = std::env::args().collect();
        let columns: Vec<u32> = arg(&args, "--columns").map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect()).unwrap_or_else(|| vec![128, 64]);
        let wanted = arg(&args, "--device");
        let dump = arg(&args, "--dump").map(std::path::PathBuf::from);
        let per_invocation: u32 = arg(&args, "--per-invocation").and_then(|v| v.parse().ok()).unwrap_or(1);
        let world_rows: Option<u32> = arg(&args, "--world").map(|v| v.parse().map_err(|_| format!("--world {v}: tile rows expected"))).transpose()?;
        let world = world_rows.is_some();
        // SAFETY: loads the system's Vulkan loader; every call below follows the Vulkan spec's
        // valid usage (objects created and destroyed on the same device, sizes as queried).
        unsafe {
            let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_1);
            let instance = entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None).map_err(|e| e.to_string())?;
            let extension = ash::khr::pipeline_executable_properties::NAME;
            let devices = instance.enumerate_physical_devices().map_err(|e| e.to_string())?;
            let physical = devices
                .into_iter()
                .find(|&d| {
                    let name = text(&instance.get_physical_device_properties(d).device_name);
                    let has = instance.enumerate_device_extension_properties(d).unwrap_or_default().iter().any(|e| text(&e.extension_name).as_bytes() == extension.to_bytes());
                    has && wanted.as_ref().is_none_or(|w| name.contains(w.as_str()))
                })
                .ok_or("no Vulkan device offers VK_KHR_pipeline_executable_properties")?;
            let properties = instance.get_physical_device_properties(physical);
            println!("device: {} (driver {:#x})", text(&properties.device_name), properties.driver_version);
            let family = instance
                .get_physical_device_queue_family_properties(physical)
                .iter()
                .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .ok_or("no compute queue")? as u32;
            let priorities = [1.0];
            let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
            let extensions = [extension.as_ptr()];
            let mut feature = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
            let device = instance
                .create_device(physical, &vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&extensions).push_next(&mut feature), None)
                .map_err(|e| e.to_string())?;
            let executables = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
            let binding = |b: u32, ty: vk::DescriptorType| vk::DescriptorSetLayoutBinding::default().binding(b).descriptor_type(ty).descriptor_count(1).stage_flags(vk::ShaderStageFlags::COMPUTE);
            let bindings = step_bindings(world)?;
            let groups = bindings.iter().map(|&(group, _, _)| group + 1).max().unwrap_or(0);
            let mut layouts = Vec::new();
            for group in 0..groups {
                let of_group: Vec<_> = bindings.iter().filter(|&&(g, _, _)| g == group).map(|&(_, b, ty)| binding(b, ty)).collect();
                layouts.push(device.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&of_group), None).map_err(|e| e.to_string())?);
            }
            let layout = device.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None).map_err(|e| e.to_string())?;
            let modes = [
                ("8 neighbours, advection", StepMode { eight_neighbours: true, triangular: false, depth_dependent: true, advection: true, edge_exchange: false }),
                ("8 neighbours, no advection", StepMode { eight_neighbours: true, triangular: false, depth_dependent: true, advection: false, edge_exchange: false }),
                ("8 neighbours, advection, open edges", StepMode { eight_neighbours: true, triangular: false, depth_dependent: true, advection: true, edge_exchange: true }),
                ("4 neighbours, advection", StepMode { eight_neighbours: false, triangular: false, depth_dependent: true, advection: true, edge_exchange: false }),
            ];
            // The world's step with and without the focus policy's held pages; the dense one once.
            let variants: Vec<Option<(u32, bool)>> = match world_rows {
                Some(rows) => vec![Some((rows, false)), Some((rows, true))],
                None => vec![None],
            };
            for &c in &columns {
                for (variant, (mode_label, mode)) in variants.iter().flat_map(|v| modes.iter().map(move |m| (v, m))) {
                    let (mode, label) = match variant {
                        Some((rows, holds)) => (*mode, format!("world, {rows}-row tiles, focus holds {holds}, {mode_label}")),
                        None => (*mode, mode_label.to_string()),
                    };
                    let label = label.as_str();
                    let words = spirv(mode, c, per_invocation, *variant)?;
                    let module = device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None).map_err(|e| e.to_string())?;
                    let name = c"step_columns";
                    let stage = vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::COMPUTE).module(module).name(name);
                    let info = vk::ComputePipelineCreateInfo::default()
                        .stage(stage)
                        .layout(layout)
                        .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR);
                    // With --dump, the pipeline is built into a cache of its own whose data (the
                    // driver's binary, in a format of the driver's) is written out for a
                    // disassembler.
                    let cache = if dump.is_some() { device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None).map_err(|e| e.to_string())? } else { vk::PipelineCache::null() };
                    let pipeline = device.create_compute_pipelines(cache, &[info], None).map_err(|(_, e)| e.to_string())?[0];
                    if let Some(dir) = &dump {
                        let data = device.get_pipeline_cache_data(cache).map_err(|e| e.to_string())?;
                        let file = dir.join(format!("step_{c}_{}.pipeline_cache", label.replace([' ', ','], "_")));
                        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                        std::fs::write(&file, &data).map_err(|e| e.to_string())?;
                        println!("  pipeline cache: {} bytes -> {}", data.len(), file.display());
                        device.destroy_pipeline_cache(cache, None);
                    }
                    println!("\n{c} columns, {label}: {} SPIR-V words", words.len());
                    let pipeline_info = vk::PipelineInfoKHR::default().pipeline(pipeline);
                    let props = executables.get_pipeline_executable_properties(&pipeline_info).map_err(|e| e.to_string())?;
                    for (index, p) in props.iter().enumerate() {
                        let exe = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index as u32);
                        println!("  executable {index}: {} (subgroup size {})", text(&p.name), p.subgroup_size);
                        let statistics = executables.get_pipeline_executable_statistics(&exe).map_err(|e| e.to_string())?;
                        for s in &statistics {
                            let value = match s.format {
                                vk::PipelineExecutableStatisticFormatKHR::BOOL32 => format!("{}", s.value.b32 != 0),
                                vk::PipelineExecutableStatisticFormatKHR::INT64 => format!("{}", s.value.i64),
                                vk::PipelineExecutableStatisticFormatKHR::UINT64 => format!("{}", s.value.u64),
                                vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => format!("{}", s.value.f64),
                                _ => "?".into(),
                            };
                            println!("    {}: {value}", text(&s.name));
                        }
                        if let Some(dir) = &dump {
                            // ash has no wrapper for this call: ask for the count, then the sizes,
                            // then the data.
                            let internal = executables.fp().get_pipeline_executable_internal_representations_khr;
                            let mut n = 0u32;
                            internal(device.handle(), &exe, &mut n, std::ptr::null_mut()).result().map_err(|e| e.to_string())?;
                            let mut reprs = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); n as usize];
                            internal(device.handle(), &exe, &mut n, reprs.as_mut_ptr()).result().map_err(|e| e.to_string())?;
                            let mut buffers: Vec<Vec<u8>> = reprs.iter().map(|r| vec![0u8; r.data_size]).collect();
                            for (r, b) in reprs.iter_mut().zip(buffers.iter_mut()) {
                                r.p_data = b.as_mut_ptr().cast();
                            }
                            internal(device.handle(), &exe, &mut n, reprs.as_mut_ptr()).result().map_err(|e| e.to_string())?;
                            for (k, (r, b)) in reprs.iter().zip(&buffers).enumerate() {
                                let file = dir.join(format!("step_{c}_{}_{k}.txt", label.replace([' ', ','], "_")));
                                std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                                std::fs::write(&file, &b[..r.data_size.min(b.len())]).map_err(|e| e.to_string())?;
                                println!("    internal representation {}: {} bytes -> {}", text(&r.name), r.data_size, file.display());
                            }
                        }
                    }
                    device.destroy_pipeline(pipeline, None);
                    device.destroy_shader_module(module, None);
                }
            }
            device.destroy_pipeline_layout(layout, None);
            for set_layout in layouts {
                device.destroy_descriptor_set_layout(set_layout, None);
            }
            device.destroy_device(None);
            instance.destroy_instance(None);
        }
        Ok(())
    }
}
