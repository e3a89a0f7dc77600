//! A world stored in pages: one logical grid, far larger than a dense grid's buffers allow,
//! whose fields exist on the device only where water is or can arrive.
//!
//! * A page is a sleeping tile of the step kernel made square (`side` = the strip's own
//!   columns, 56 cells with the 64-column kernel). A page near water holds its terrain in a slot
//!   of the terrain buffer (4 bytes a cell) and, when water is in it or next to it, its depth and
//!   pipes in a slot of theirs (40 bytes a cell: two depth and two pipe copies); `page_slots`
//!   names each page's two slots: [`NO_PAGE`] for no terrain, [`ZERO_SLOT`] (a slot of zeros no
//!   step writes) for no water fields. The step and the plan of the sleeping tiles are the dense
//!   grid's WGSL compiled with `cells_paged.wgsl` ([`shaders::WORLD_STEP`],
//!   [`shaders::WORLD_TILES`]): the plan steps a page only when it has water fields and its eight
//!   neighbours their terrain, so what the step reads of a page's cells (four columns and three
//!   rows around them) is on the device and the step is the dense grid's, bit for bit. Where
//!   the awake tiles are many, the plan lists the tiles of a page that all step as one entry, which
//!   one workgroup walks ([`World::set_merge_floor`]): fewer halo rows recomputed for the same
//!   cells, the same water.
//! * Which pages are resident is the host's decision, from the pages' wet flags the device
//!   reports after each frame ([`TILE_WET`], and for each of a page's eight neighbours whether a
//!   wet cell lies within half a page of it, [`TILE_NEAR_NORTH`]) and the cells edits put water
//!   in: a wet page and those of its neighbours its water is near hold water fields (every
//!   neighbour, along an edge that exchanges water and around a page the focus releases), and
//!   every neighbour of a page with water fields holds its terrain. Water moves at most one
//!   cell a step, so from what the host last saw it needs half a page of steps to come beside a
//!   neighbour it was not near, which could not step: the host never runs more than
//!   [`World::margin_steps`] steps past what it last saw, and waits for the flags when a frame
//!   would. The plan counts any page it had to skip with water beside it
//!   ([`WorldReport::faults`]): zero by construction, and tests hold it so. A lake whose shore
//!   lies inside its pages brings no ring of dry pages with water fields around it.
//! * Terrain of pages that are not resident stays on the host ([`World::set_terrain_region`]
//!   writes both), uploaded with the page when it comes in; a page that leaves was dry (no water
//!   near it), so nothing of it needs reading back. The ledger is the dense grid's: edits and
//!   edges count on the device, and a page that leaves holds no water.
//! * The fields' buffers grow with the water (new ones an eighth larger than it needs, at most
//!   256 pages of room spare, the old slots copied over) and shrink as it recedes: once the slots
//!   in use fall to half the room or less, and 16 pages or more below it, new buffers of the room
//!   the growing rule gives them, the live slots moved into the lowest slot numbers in one copy
//!   ([`WorldReport::shrinks`]). A world drained dry comes back to a new world's room; one hovering
//!   about a size does not make buffers every frame, as it grows only past its spare room and
//!   shrinks only once its water halves. Both happen where the host decides residency, before a
//!   frame's work is recorded, and nothing in flight names a slot (flags name tiles; a save's copy
//!   is recorded from the slots of its moment).
//! * Pages may be held back for a frame ([`World::set_held_pages`], the focus policy of
//!   [`crate::world_water::WorldWater::set_far_step_every`]): the plan does not step them, and a
//!   pipeline of the step compiled with `FOCUS_HOLDS` closes every pipe between a cell that steps
//!   and a cell of a held page on both sides, so the ledger stays exact. A held page keeps both
//!   copies of its fields equal and its water fields, and steps what it owes once released.

mod bodies;
mod coarse;
mod detail;
pub use coarse::{CoarseParams, CoarseRead, COARSE_SUMS, COARSE_WORKGROUP};
pub use detail::REGION_WORKGROUP;

use super::bind_buffers as bind;
use super::context::{GpuContext, EDIT_WORKGROUP, TILES_WORKGROUP};
use super::list::DeviceList;
use super::shaders;
use super::timing::{DispatchTimer, Stamp};
use crate::backend::gpu_host::GpuHost;
use crate::backend::recovery::COUNTER_BYTES;
use crate::backend::sleep::{constants_change, TileGrid, TileParams, AWAKE_LIST_HEADER, EMPTY_AWAKE_LIST, TILE_AWAKE, TILE_NEAR_NORTH, TILE_WET, WAKE_FIRST_STEP};
use crate::backend::step_kernel::{StepMode, COLUMN_HALO};
use crate::error::{Error, Result};
use crate::pipes::StepConstants;
use crate::quanta::MAX_TERRAIN_ABS;
use crate::state::Counters;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Terrain slot of a page that holds nothing on the device (`cells_paged.wgsl`).
pub const NO_PAGE: u32 = u32::MAX;
/// Water slot of a page without water fields: zeros, shared, never written.
pub const ZERO_SLOT: u32 = 0;
/// A page's eight neighbours in the order of the flags' bits ([`TILE_NEAR_NORTH`] on): north,
/// east, south, west, then north-east, south-east, south-west, north-west.
const NEIGHBOURS: [(i64, i64); 8] = [(0, -1), (1, 0), (0, 1), (-1, 0), (1, -1), (1, 1), (-1, 1), (-1, -1)];
/// Every neighbour of a page, as near bits.
const ALL_NEIGHBOURS: u8 = 0xff;
/// Bytes a cell of a page with water fields holds on the device: terrain (4), depth twice (8),
/// pipes twice (32); a page with terrain alone holds [`BYTES_PER_TERRAIN_CELL`].
pub const BYTES_PER_RESIDENT_CELL: u64 = 44;
/// Bytes a cell of a page holding only its terrain takes on the device.
pub const BYTES_PER_TERRAIN_CELL: u64 = 4;
/// Bytes a page costs on the device whether resident or not: its slot entry, and for each of its
/// [`DEFAULT_TILE_ROWS_PER_PAGE`] tiles flags twice, an entry in each awake list, and its wake
/// and stale marks.
pub const BYTES_PER_PAGE: u64 = 8 + (DEFAULT_TILE_ROWS_PER_PAGE as u64) * BYTES_PER_TILE;
/// Bytes a tile of the step costs on the device whether its page is resident or not.
const BYTES_PER_TILE: u64 = 8 + 8 + 4 + 4;
/// Tiles (the step's workgroups) a page is cut into along y by default: a page is tall enough for
/// the host to keep ahead of the water, and a workgroup walks its tile's rows one after another,
/// so shorter tiles give a few pages more workgroups to run side by side.
pub const DEFAULT_TILE_ROWS_PER_PAGE: u32 = 4;
/// Workgroups the step should still have after running the tiles of awake pages together
/// ([`World::merge_for`]): about eight rounds of what a large GPU runs at once (132
/// multiprocessors of eight workgroups on an H100 or H200). With fewer, a page's tiles step apart,
/// side by side: one river's pages then run four workgroups each instead of one, and the GPU is
/// not left waiting on a few long walks. On an H200 (docs/BENCHMARKS.md), a 4096² world awake
/// everywhere stepped 6 % faster in pairs of tiles (10 878 workgroups) and 5 % in whole pages
/// (5 476); a 2048² one 16 % slower in whole pages (1 443), where its tiles apart (5 439) ran as
/// before.
const MERGED_WORKGROUPS_FLOOR: usize = 8192;
/// Tile numbers stay below this: an awake list's entry holds how many tiles it runs in the bits
/// above (`cells_paged.wgsl` MERGED_SHIFT).
const MAX_TILES: usize = 1 << 28;
/// Words of the plan's tiles buffer in front of the tiles: their count, and the tiles of a page
/// the step runs as one workgroup when all of them are awake (`cells_paged.wgsl`).
const PLANNED_HEADER: usize = 2;
/// Readbacks of the pages' flags that may be on their way at once: enough that the host never
/// waits for the newest frame's (the device would then idle while the host records the next);
/// the margin ([`World::margin_steps`]) bounds how far behind the flags may be in any case.
const MAX_FLAG_READS: usize = 4;
/// Most pages of room a growing world's buffers keep beyond what its water needs: an eighth
/// more while small, so that a spreading flood does not copy its fields every frame, but no more
/// than this (35 MiB of water fields), which a large world's memory would otherwise carry unused.
const MOST_SPARE_PAGES: usize = 256;
/// Least pages of room beyond those in use before a world shrinks ([`World::shrink`]): what a
/// new world starts with; below that the room (2 MiB of water fields) is not worth new buffers.
const LEAST_SHRINK_PAGES: usize = 16;
/// Longest the host waits for the device.
const DEVICE_WAIT_LIMIT: Duration = Duration::from_secs(60);

const READ_FREE: u32 = 0;
const READ_PENDING: u32 = 1;
const READ_READY: u32 = 2;
const READ_FAILED: u32 = 3;

/// What the world did, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorldReport {
    /// Pages in the world.
    pub pages: usize,
    /// Pages whose terrain is on the device now.
    pub resident: usize,
    /// Pages with water fields now (those that may step).
    pub watered: usize,
    /// Pages the flags last read back hold water in.
    pub wet: usize,
    /// Water slots the buffers have room for (the zero slot aside).
    pub capacity: usize,
    /// Pages brought in since the world was made.
    pub allocated: u64,
    /// Pages sent out since the world was made.
    pub freed: u64,
    /// Plans that found water beside a page that could not step (zero by construction).
    pub faults: u64,
    /// Times the host waited for the flags before a frame, to keep within the margin.
    pub waits: u64,
    /// Steps run.
    pub steps: u64,
    /// Tiles the last step of the last frame read back ran.
    pub awake: u32,
    /// Workgroups that step ran them in: fewer than `awake` where it ran pages' tiles as one
    /// ([`World::set_merge_floor`]).
    pub workgroups: u32,
    /// Pages held back now by the focus policy ([`World::set_held_pages`]).
    pub held: usize,
    /// Times the fields moved into smaller buffers as the water receded (module docs).
    pub shrinks: u64,
}

/// When a world moves its fields into smaller buffers ([`World::set_shrink_rule`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShrinkRule {
    /// Never: the buffers keep the room of the most water they held (as before issue #48).
    Never,
    /// When the slots in use fall to half the room or less, and 16 pages or more below it (the
    /// default).
    WhenSpare,
    /// At every frame (and every edit flushed), whether or not there is room to give back: the
    /// live slots move each time, for tests that the water steps the same.
    EveryFrame,
}

/// A save of a world on its way ([`World::begin_save`]).
pub struct WorldSaveJob {
    stage: SaveStage,
}

impl WorldSaveJob {
    /// The world's step count the save holds, once its copy is recorded (`None` before).
    pub fn recorded_step(&self) -> Option<u64> {
        match self.stage {
            SaveStage::Making(_) => None,
            SaveStage::Reading(_, step) => Some(step),
            SaveStage::Handed => None,
        }
    }
}

enum SaveStage {
    /// A worker makes the device buffer the water is copied into: making hundreds of MB of
    /// device memory holds the calling thread for many milliseconds.
    Making(std::thread::JoinHandle<wgpu::Buffer>),
    /// The copy is recorded; a worker reads it back and encodes the save.
    /// With the step the copy holds.
    Reading(std::thread::JoinHandle<Result<Vec<u8>>>, u64),
    Handed,
}

/// A water edit waiting for its page to be resident.
#[derive(Debug, Clone, Copy)]
struct PendingWater {
    page: usize,
    /// Cell within the page, row-major.
    within: u32,
    quanta: i32,
}

/// One readback of the pages' flags and the frame's report.
struct FlagRead {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU32>,
    /// World step count the flags hold.
    step: u64,
    /// The tiles whose flags it holds, in order (the plan's list then).
    tiles: Vec<u32>,
}

/// The device fields of the resident pages: `terrain_capacity` terrain slots and
/// `water_capacity` water slots (slot [`ZERO_SLOT`] among them) of `side²` cells each.
struct Fields {
    terrain_capacity: usize,
    water_capacity: usize,
    terrain: wgpu::Buffer,
    depth: [wgpu::Buffer; 2],
    flux: [wgpu::Buffer; 2],
}

impl Fields {
    fn new(device: &wgpu::Device, terrain_capacity: usize, water_capacity: usize, page_cells: u64) -> Fields {
        use wgpu::BufferUsages as U;
        let (t, w) = (terrain_capacity as u64 * page_cells, water_capacity as u64 * page_cells);
        // Created zeroed: the zero slot stays so, as nothing writes it.
        let field = |label: &str, bytes: u64| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage: U::STORAGE | U::COPY_DST | U::COPY_SRC, mapped_at_creation: false });
        Fields {
            terrain_capacity,
            water_capacity,
            terrain: field("world terrain", t * 4),
            depth: [field("world depth 0", w * 4), field("world depth 1", w * 4)],
            flux: [field("world flux 0", w * 16), field("world flux 1", w * 16)],
        }
    }

    fn bytes(&self, page_cells: u64) -> u64 {
        page_cells * (self.terrain_capacity as u64 * BYTES_PER_TERRAIN_CELL + self.water_capacity as u64 * (BYTES_PER_RESIDENT_CELL - BYTES_PER_TERRAIN_CELL))
    }
}

/// A world of `width × height` cells stored in pages on the wgpu device (module docs).
pub struct World {
    ctx: Arc<GpuContext>,
    width: u32,
    height: u32,
    /// The pages, `side × side` cells, each a column of `tiles_per_page` tiles of the step.
    pages: TileGrid,
    tiles: TileGrid,
    tiles_per_page: u32,
    side: u32,
    /// Terrain of each page on the host (`side²` cells, the world's edge pages padded), m; a
    /// page whose terrain was never set lies at `ground` and holds nothing here.
    /// Shared, so that a save takes them without copying (a write copies the page first).
    terrain: Vec<Option<Arc<Vec<f32>>>>,
    ground: f32,
    /// Terrain and water slots of each page ([`NO_PAGE`], [`ZERO_SLOT`] for none).
    slots: Vec<[u32; 2]>,
    /// The pages with a terrain slot (those with water fields among them), in order: what the
    /// host walks each frame, so that its work follows the water and not the world's size.
    resident: std::collections::BTreeSet<usize>,
    free_terrain: Vec<u32>,
    free_water: Vec<u32>,
    /// Pages the flags last read back hold water in, with the neighbours their water is near
    /// (bits in [`NEIGHBOURS`]' order).
    wet: std::collections::BTreeMap<usize, u8>,
    observed_step: u64,
    /// Pages edits put water in since, with the neighbours that water is near and the step of
    /// the edit.
    wetted: Vec<(usize, u8, u64)>,
    fields: Fields,
    page_slots: wgpu::Buffer,
    /// The tiles the plan runs (`cells_paged.wgsl`): a count, the tiles of a page the step runs
    /// as one workgroup when all step (`merge`), then the tiles of the pages with water fields.
    planned: wgpu::Buffer,
    planned_flags: wgpu::Buffer,
    /// The tiles in `planned`, and how many it has room for.
    planned_tiles: Vec<u32>,
    planned_capacity: usize,
    /// The tiles of a page the step runs as one workgroup when all of them step, as `planned`
    /// holds it ([`World::merge_for`]).
    merge: u32,
    /// `PIPEWATER_WORLD_MERGE_FLOOR`: workgroups below which the step stops running pages whole
    /// ([`MERGED_WORKGROUPS_FLOOR`] unless set; tests set 0 to run every page that can be whole).
    merge_floor: usize,
    uniforms: wgpu::Buffer,
    counters: wgpu::Buffer,
    tile_params: wgpu::Buffer,
    flags: [wgpu::Buffer; 2],
    lists: [wgpu::Buffer; 2],
    wakes: wgpu::Buffer,
    stats: wgpu::Buffer,
    water_edits: DeviceList,
    terrain_edits: DeviceList,
    step_groups: [wgpu::BindGroup; 2],
    plan_groups: [wgpu::BindGroup; 2],
    edit_groups: [wgpu::BindGroup; 2],
    page_group: wgpu::BindGroup,
    /// One bit a page: held back this frame ([`World::set_held_pages`]), for the plan and the step.
    page_held: wgpu::Buffer,
    /// Pages held back now, and their count.
    held: Vec<bool>,
    held_count: usize,
    /// Held pages whose two copies of depth and pipes must be made equal before the next step:
    /// pages held since they last stepped (the copy the next step writes is a step old), and held
    /// pages an edit wrote (into the current copy only). A held page is then as a sleeping tile
    /// is: both copies hold its water, whichever the steps read.
    held_syncs: Vec<usize>,
    pipelines: WorldPipelines,
    /// The step's pipeline for the mode, compiled without and with closing the pipes into held
    /// pages (`FOCUS_HOLDS`): a frame that holds nothing back runs the step it always ran.
    step_pipelines: [Option<(StepMode, wgpu::ComputePipeline)>; 2],
    /// Water edits not yet applied, in the order made.
    pending_water: Vec<PendingWater>,
    /// Host marks per tile (`tile_wakes`), and the tiles marked since the last frame.
    marks: Vec<u32>,
    marked: Vec<usize>,
    reads: Vec<FlagRead>,
    current: usize,
    last_constants: Option<StepConstants>,
    report: WorldReport,
    /// Tests only: residency follows edits alone and never the water (`hold_residency`).
    residency_held: bool,
    /// Whether what residency follows changed since it was last worked out: the wet pages, the
    /// edits, the edges that exchange water. Working it out walks every page of the world.
    residency_stale: bool,
    residency_edges: Option<[u32; 4]>,
    /// The far water's pass ([`World::begin_coarse`]), made on first use.
    coarse_pipeline: Option<coarse::PagePass>,
    /// Per page whose terrain was set: for each stride asked of it, its terrain's sums over the
    /// blocks of that stride it meets ([`World::terrain_block_means`]); dropped when the page's
    /// terrain changes.
    terrain_block_sums: std::collections::HashMap<usize, Vec<(u32, Vec<f64>)>>,
    /// Each page's mean terrain over its cells on the world (`ground` for a page never set): the
    /// far water's ground for blocks away from its water ([`World::terrain_block_means`]).
    page_terrain_means: Vec<f32>,
    /// Heads of floating bodies per page: (cell within the page, head m), sorted by cell. The
    /// page's terrain slot holds its terrain plus these (world/bodies.rs).
    displacement: std::collections::HashMap<usize, Vec<(u32, f32)>>,
    /// The detail waves on the device, while they are on (world/detail.rs).
    detail: Option<detail::WorldDetailLayer>,
    /// When the fields move into smaller buffers ([`World::set_shrink_rule`]).
    shrink_rule: ShrinkRule,
    /// Timestamps of the frames' dispatches, while a benchmark asks for them (timing.rs).
    timer: Option<DispatchTimer>,
}

struct WorldPipelines {
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
    plan_frame_start: wgpu::ComputePipeline,
    plan_next_step: wgpu::ComputePipeline,
    report_awake_tiles: wgpu::ComputePipeline,
    gather_planned_flags: wgpu::ComputePipeline,
    page_layout: wgpu::BindGroupLayout,
}

impl WorldPipelines {
    fn new(ctx: &GpuContext, side: u32, tile_rows: u32) -> WorldPipelines {
        let device = &ctx.device;
        let page_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("world pages"),
            entries: &[0, 1, 2, 3].map(|binding| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                // The planned flags (2) are written; the slots, the plan's tiles and the held bits read.
                ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only: binding != 2 }, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            }),
        });
        let tiles_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("world tiles"),
            source: wgpu::ShaderSource::Wgsl(shaders::WORLD_TILES.source().into()),
        });
        let tiles_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("world tiles"),
            bind_group_layouts: &[Some(&ctx.tiles_layout), Some(&page_layout)],
            immediate_size: 0,
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&tiles_layout),
                module: &tiles_module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &[("PAGE_SIDE", side as f64), ("TILE_ROWS", tile_rows as f64)], zero_initialize_workgroup_memory: true },
                cache: None,
            })
        };
        let plan_frame_start = pipeline("plan_frame_start");
        let plan_next_step = pipeline("plan_next_step");
        let report_awake_tiles = pipeline("report_awake_tiles");
        let gather_planned_flags = pipeline("gather_planned_flags");
        let desc = wgpu::ShaderModuleDescriptor { label: Some("world step"), source: wgpu::ShaderSource::Wgsl(shaders::WORLD_STEP.source().into()) };
        let module = if std::env::var("PIPEWATER_GPU_CHECKED").is_ok_and(|v| v == "1") {
            device.create_shader_module(desc)
        } else {
            // SAFETY: as the dense step (context.rs): every cell the kernel indexes is on the
            // world (`cell_in_grid`) and lies in a page the plan found resident with its eight
            // neighbours (`tile_steppable`), whose slot is within the buffers; workgroup memory
            // as the dense kernel's.
            unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
        };
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("world step"),
            bind_group_layouts: &[Some(&ctx.step_layout), Some(&page_layout)],
            immediate_size: 0,
        });
        WorldPipelines { module, layout, plan_frame_start, plan_next_step, report_awake_tiles, gather_planned_flags, page_layout }
    }
}

impl World {
    /// A dry world of `width × height` cells with its terrain at `ground` m everywhere, on the
    /// process-wide device. Refused (naming the figure) when the pages' own bookkeeping would not
    /// fit one storage binding; the fields grow with the water.
    pub fn new(width: u32, height: u32, ground: f32) -> Result<World> {
        if width == 0 || height == 0 || width > i32::MAX as u32 / 2 || height > i32::MAX as u32 / 2 {
            return Err(Error::invalid("world size", format!("{width}x{height}"), format!("each side 1 ..= {}", i32::MAX / 2)));
        }
        if !ground.is_finite() || ground.abs() > MAX_TERRAIN_ABS {
            return Err(Error::invalid("ground", ground, format!("finite, within ±{MAX_TERRAIN_ABS} m")));
        }
        let ctx = GpuContext::shared()?;
        ctx.check()?;
        let side = ctx.kernel.columns - 2 * COLUMN_HALO;
        let tiles_per_page = match std::env::var("PIPEWATER_WORLD_TILES_PER_PAGE") {
            Ok(v) => v.parse::<u32>().ok().filter(|&k| k >= 1 && side % k == 0 && side / k >= 4).ok_or_else(|| {
                Error::invalid("PIPEWATER_WORLD_TILES_PER_PAGE", &v, format!("a divisor of the page side {side} leaving tiles of at least 4 rows"))
            })?,
            Err(_) => DEFAULT_TILE_ROWS_PER_PAGE,
        };
        let pages = TileGrid::new(width, height, [side, side]);
        let tiles = TileGrid::new(width, height, [side, side / tiles_per_page]);
        let count = pages.count();
        let tile_count = tiles.count();
        let merge_floor = match std::env::var("PIPEWATER_WORLD_MERGE_FLOOR") {
            Ok(v) => v.parse::<usize>().map_err(|_| Error::invalid("PIPEWATER_WORLD_MERGE_FLOOR", &v, "a count of workgroups"))?,
            Err(_) => MERGED_WORKGROUPS_FLOOR,
        };
        let limit = ctx.limits.max_storage_buffer_binding_size.min(ctx.limits.max_buffer_size);
        let list_bytes = 4 * (AWAKE_LIST_HEADER + tile_count) as u64;
        let plan_groups = (tile_count as u64).div_ceil(TILES_WORKGROUP as u64);
        if list_bytes > limit || plan_groups > ctx.limits.max_compute_workgroups_per_dimension as u64 {
            return Err(Error::GpuUnavailable(format!(
                "a world of {width}x{height} cells has {count} pages of {side}x{side}: its page lists need {list_bytes} bytes and its plan {plan_groups} workgroups, past the {limit} bytes one binding of {} holds or its {} workgroups a dispatch",
                ctx.adapter.name, ctx.limits.max_compute_workgroups_per_dimension
            )));
        }
        if tile_count >= MAX_TILES {
            return Err(Error::invalid("world size", format!("{width}x{height}"), format!("fewer than {MAX_TILES} tiles of {side}x{} cells in its {count} pages", side / tiles_per_page)));
        }
        let device = &ctx.device;
        use wgpu::BufferUsages as U;
        let buffer = |label: &str, bytes: u64, usage: U| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.max(16), usage, mapped_at_creation: false });
        let n = tile_count as u64;
        let page_slots = buffer("page slots", 8 * count as u64, U::STORAGE | U::COPY_DST);
        let uniforms = buffer("world constants", std::mem::size_of::<StepConstants>() as u64, U::UNIFORM | U::COPY_DST);
        let counters = buffer("world counters", COUNTER_BYTES as u64, U::STORAGE | U::COPY_DST | U::COPY_SRC);
        let tile_params = buffer("world tile params", std::mem::size_of::<TileParams>() as u64, U::UNIFORM | U::COPY_DST);
        let flags = [0, 1].map(|k| buffer(&format!("page flags {k}"), 4 * n, U::STORAGE | U::COPY_SRC | U::COPY_DST));
        let lists = [0, 1].map(|k| buffer(&format!("awake pages {k}"), list_bytes, U::STORAGE | U::INDIRECT | U::COPY_DST));
        let wakes = buffer("page wakes", 4 * n, U::STORAGE | U::COPY_DST);
        let stats = buffer("world sleep stats", 16, U::STORAGE | U::COPY_SRC | U::COPY_DST);
        // Bound where a dense grid's plan marks the tiles it steps stale for a snapshot; a
        // world's takes none, and its plan marks none (tiles.wgsl).
        let stale = buffer("world stale pages", 4 * n, U::STORAGE);
        let pipelines = WorldPipelines::new(&ctx, side, side / tiles_per_page);
        let planned = buffer("planned tiles", 4 * (63 + PLANNED_HEADER as u64), U::STORAGE | U::COPY_DST);
        let planned_flags = buffer("planned flags", 4 * 64, U::STORAGE | U::COPY_SRC);
        let page_cells = (side * side) as u64;
        let fields = Fields::new(device, 16, 17, page_cells);
        let free_terrain: Vec<u32> = (0..fields.terrain_capacity as u32).rev().collect();
        let free_water: Vec<u32> = (1..fields.water_capacity as u32).rev().collect();
        let water_edits = DeviceList::new(device, "world water edits", 16, 8);
        let terrain_edits = DeviceList::new(device, "world terrain edits", 16, 8);
        let page_held = buffer("held pages", 4 * count.div_ceil(32) as u64, U::STORAGE | U::COPY_DST);
        let page_group = bind(device, &pipelines.page_layout, "world pages", &[&page_slots, &planned, &planned_flags, &page_held]);
        let plan_groups = [0, 1].map(|k| {
            let buffers = [&uniforms, &tile_params, &flags[1 - k], &flags[k], &wakes, &lists[k], &lists[1 - k], &stats, &stale];
            bind(device, &ctx.tiles_layout, "world tiles", &buffers)
        });
        let (step_groups, edit_groups) = field_groups(&ctx, &fields, &uniforms, &counters, &tile_params, &lists, &flags, &water_edits, &terrain_edits);
        ctx.queue.write_buffer(&page_slots, 0, bytemuck::cast_slice(&vec![[NO_PAGE, ZERO_SLOT]; count]));
        for list in &lists {
            ctx.queue.write_buffer(list, 0, bytemuck::cast_slice(&EMPTY_AWAKE_LIST));
        }
        Ok(World {
            width,
            height,
            pages,
            tiles,
            tiles_per_page,
            side,
            terrain: vec![None; count],
            page_terrain_means: vec![ground; count],
            ground,
            slots: vec![[NO_PAGE, ZERO_SLOT]; count],
            resident: std::collections::BTreeSet::new(),
            free_terrain,
            free_water,
            wet: std::collections::BTreeMap::new(),
            observed_step: 0,
            wetted: Vec::new(),
            fields,
            page_slots,
            planned,
            planned_flags,
            planned_tiles: Vec::new(),
            planned_capacity: 63,
            merge: 1,
            merge_floor,
            uniforms,
            counters,
            tile_params,
            flags,
            lists,
            wakes,
            stats,
            water_edits,
            terrain_edits,
            step_groups,
            plan_groups,
            edit_groups,
            page_group,
            page_held,
            held: vec![false; count],
            held_count: 0,
            held_syncs: Vec::new(),
            pipelines,
            step_pipelines: [None, None],
            pending_water: Vec::new(),
            marks: vec![0; tile_count],
            marked: Vec::new(),
            // Made by the first frames (record_flag_read), up to MAX_FLAG_READS.
            reads: Vec::new(),
            current: 0,
            last_constants: None,
            report: WorldReport { pages: count, capacity: 16, ..WorldReport::default() },
            residency_held: false,
            residency_stale: true,
            residency_edges: None,
            coarse_pipeline: None,
            terrain_block_sums: std::collections::HashMap::new(),
            displacement: std::collections::HashMap::new(),
            detail: None,
            shrink_rule: ShrinkRule::WhenSpare,
            timer: None,
            ctx,
        })
    }

    /// Cells along x and y.
    pub fn size(&self) -> [u32; 2] {
        [self.width, self.height]
    }

    /// Cells along each side of a page.
    pub fn page_side(&self) -> u32 {
        self.side
    }

    /// Waits until the device has finished the work submitted so far.
    pub fn wait_idle(&self) -> Result<()> {
        super::context::wait_for_submitted(&self.ctx.device, &self.ctx.queue, DEVICE_WAIT_LIMIT, "the world's work")?;
        self.ctx.check()
    }

    /// Most steps the host runs past the flags it last saw: water that was not within half a
    /// page of a neighbour (`cells_paged.wgsl` wet_edges) needs that many steps to come beside
    /// it (module docs); two spare.
    pub fn margin_steps(&self) -> u64 {
        (self.side / 2) as u64 - 2
    }

    /// Bytes the world holds on the device: its fields' slots and its pages' bookkeeping.
    pub fn device_bytes(&self) -> u64 {
        // Each planned tile also has its list entry, its flags gathered and their two staging copies.
        let planned = self.planned_capacity as u64 * 4 * 4;
        let held_bits = 4 * self.pages.count().div_ceil(32) as u64;
        self.fields.bytes((self.side * self.side) as u64) + self.pages.count() as u64 * 8 + held_bits + self.tiles.count() as u64 * BYTES_PER_TILE + planned + COUNTER_BYTES as u64 + 16 + 256
    }

    /// What the world holds and did so far.
    pub fn report(&self) -> WorldReport {
        let mut report = self.report;
        report.resident = self.resident.len();
        report.watered = self.watered_slot_count();
        report.wet = self.wet.len();
        report.capacity = self.fields.water_capacity - 1;
        report
    }

    /// The page of cell (x, y), and the cell's index within it.
    fn page_cell(&self, x: u32, y: u32) -> (usize, usize) {
        (self.pages.tile_of(x, y), ((y % self.side) * self.side + x % self.side) as usize)
    }

    /// Page `page`'s mean terrain over its cells on the world.
    fn page_terrain_mean(&self, page: usize) -> f32 {
        let Some(heights) = &self.terrain[page] else { return self.ground };
        let side = self.side;
        let (px, py) = (page as u32 % self.pages.tiles[0], page as u32 / self.pages.tiles[0]);
        let (across, down) = ((self.width - px * side).min(side), (self.height - py * side).min(side));
        let sum: f64 = (0..down).map(|row| heights[(row * side) as usize..(row * side + across) as usize].iter().map(|&v| v as f64).sum::<f64>()).sum();
        (sum / (across as f64 * down as f64)) as f32
    }

    /// Sets the terrain of the `w × h` cells from (x, y), row-major `heights` (m), on the host and
    /// in resident pages, keeping depth: the pages it changes step next.
    pub fn set_terrain_region(&mut self, x: u32, y: u32, w: u32, h: u32, heights: &[f32]) -> Result<()> {
        if x as u64 + w as u64 > self.width as u64 || y as u64 + h as u64 > self.height as u64 || heights.len() as u64 != w as u64 * h as u64 {
            return Err(Error::invalid(
                "terrain region",
                format!("{w}x{h} at ({x}, {y}) with {} heights", heights.len()),
                format!("a region within the {}x{} world with w·h heights", self.width, self.height),
            ));
        }
        if let Some(bad) = heights.iter().find(|v| !v.is_finite() || v.abs() > MAX_TERRAIN_ABS) {
            return Err(Error::invalid("terrain height", bad, format!("finite, within ±{MAX_TERRAIN_ABS} m")));
        }
        if w == 0 || h == 0 {
            return Ok(());
        }
        // Page by page, a row's run at a time: asking of each cell whether its page was touched
        // already made a 16384 × 1024 strip take seconds.
        let (side, ground) = (self.side, self.ground);
        let mut touched = Vec::new();
        for py in y / side..=(y + h - 1) / side {
            for px in x / side..=(x + w - 1) / side {
                let page = self.pages.tile_of(px * side, py * side);
                let first = [px * side, py * side];
                let (x0, x1) = (x.max(first[0]), (x + w).min(first[0] + side));
                let (y0, y1) = (y.max(first[1]), (y + h).min(first[1] + side));
                let cells = Arc::make_mut(self.terrain[page].get_or_insert_with(|| Arc::new(vec![ground; (side * side) as usize])));
                let run = (x1 - x0) as usize;
                for row in y0..y1 {
                    let from = ((row - y) * w + (x0 - x)) as usize;
                    let to = ((row - first[1]) * side + (x0 - first[0])) as usize;
                    cells[to..to + run].copy_from_slice(&heights[from..from + run]);
                }
                touched.push(page);
            }
        }
        for page in touched {
            self.terrain_block_sums.remove(&page);
            self.page_terrain_means[page] = self.page_terrain_mean(page);
            self.mark(page);
            if self.slots[page][0] != NO_PAGE {
                self.upload_terrain(page);
            }
        }
        Ok(())
    }

    /// Terrain (m) of the `w × h` cells from (x, y), row-major, from the host's copy (which holds
    /// every page's terrain, resident or not): no wait for the device.
    pub fn terrain_region(&self, x: u32, y: u32, w: u32, h: u32) -> Result<Vec<f32>> {
        if x as u64 + w as u64 > self.width as u64 || y as u64 + h as u64 > self.height as u64 {
            return Err(Error::invalid("region", format!("{w}x{h} at ({x}, {y})"), format!("a region within the {}x{} world", self.width, self.height)));
        }
        let mut out = Vec::with_capacity(w as usize * h as usize);
        for row in y..y + h {
            for col in x..x + w {
                let (page, at) = self.page_cell(col, row);
                out.push(self.terrain[page].as_ref().map_or(self.ground, |t| t[at]));
            }
        }
        Ok(out)
    }

    /// Writes `page`'s terrain slot: its terrain, plus the heads of floating bodies on it (the
    /// bed the step reads; world/bodies.rs).
    fn upload_terrain(&self, page: usize) {
        let cells = (self.side * self.side) as usize;
        let at = self.slots[page][0] as u64 * cells as u64 * 4;
        let displaced = self.displacement.contains_key(&page);
        match &self.terrain[page] {
            Some(heights) if !displaced => self.ctx.queue.write_buffer(&self.fields.terrain, at, bytemuck::cast_slice(heights)),
            terrain => {
                let mut bed = terrain.as_ref().map_or_else(|| vec![self.ground; cells], |t| t.to_vec());
                self.add_heads(page, &mut bed);
                self.ctx.queue.write_buffer(&self.fields.terrain, at, bytemuck::cast_slice(&bed));
            }
        }
    }

    /// For tests of the fault count: with `hold` the pages resident stay so and only edits bring
    /// more in, whatever the water does (the host's guarantee switched off).
    #[doc(hidden)]
    pub fn hold_residency(&mut self, hold: bool) {
        self.residency_held = hold;
        self.residency_stale = true;
    }

    /// Bytes the host holds for the terrain of pages set apart from the ground.
    pub fn host_terrain_bytes(&self) -> u64 {
        self.terrain.iter().flatten().map(|t| 4 * t.len() as u64).sum()
    }

    fn mark(&mut self, page: usize) {
        for tile in self.tiles_of(page).collect::<Vec<_>>() {
            if self.marks[tile] == 0 {
                self.marked.push(tile);
            }
            self.marks[tile] |= WAKE_FIRST_STEP;
        }
    }

    /// Sets the workgroups below which the step runs the tiles of a page apart even when all of
    /// them step ([`MERGED_WORKGROUPS_FLOOR`] by default, or `PIPEWATER_WORLD_MERGE_FLOOR`); 0
    /// runs every page whole whose tiles all step, `usize::MAX` none. The water steps the same
    /// to the bit whichever it is: a choice of speed, for tests and benchmarks.
    pub fn set_merge_floor(&mut self, workgroups: usize) {
        self.merge_floor = workgroups;
    }

    /// The tiles of a page the step runs as one workgroup when all of them step, with `awake`
    /// tiles awake (as last read back): the most, a divisor of the page's tiles, that leaves the
    /// step at least `merge_floor` workgroups. Fewer halo rows to recompute for the same cells
    /// (a 56-row walk computes 62 rows, four 14-row walks 80) where there is work enough to
    /// fill the GPU. Any choice steps the same water.
    fn merge_for(&self, awake: usize) -> u32 {
        (1..=self.tiles_per_page).rev().find(|&m| self.tiles_per_page % m == 0 && awake / m as usize >= self.merge_floor).unwrap_or(1)
    }

    /// The tiles of `page`, top to bottom.
    fn tiles_of(&self, page: usize) -> impl Iterator<Item = usize> {
        let [px, tiles_x] = [(page % self.pages.tiles[0] as usize) as u32, self.tiles.tiles[0]];
        let top = (page / self.pages.tiles[0] as usize) as u32 * self.tiles_per_page;
        (top..(top + self.tiles_per_page).min(self.tiles.tiles[1])).map(move |ty| (ty * tiles_x + px) as usize)
    }

    /// Adds (or with negative quanta removes, no more than is there) water at cells (x, y),
    /// before the next step, in the order given.
    pub fn add_water(&mut self, cells: &[(u32, u32, i32)]) -> Result<()> {
        if let Some(&(x, y, _)) = cells.iter().find(|&&(x, y, _)| x >= self.width || y >= self.height) {
            return Err(Error::invalid("cell", format!("({x}, {y})"), format!("a cell of the {}x{} world", self.width, self.height)));
        }
        let mut wetted = std::collections::BTreeMap::new();
        for &(x, y, quanta) in cells {
            let (page, _) = self.page_cell(x, y);
            let within = (y % self.side) * self.side + x % self.side;
            if quanta > 0 {
                *wetted.entry(page).or_insert(0) |= self.near_neighbours(within);
            }
            self.mark(page);
            self.pending_water.push(PendingWater { page, within, quanta });
        }
        if !wetted.is_empty() {
            self.residency_stale = true;
        }
        let step = self.report.steps;
        self.wetted.extend(wetted.into_iter().map(|(page, near)| (page, near, step)));
        Ok(())
    }

    /// The neighbours of its page that water in cell `within` (row-major in the page) may reach
    /// within [`World::margin_steps`] steps, as `wet_edges` in `cells_paged.wgsl` flags them:
    /// those it lies within half a page of.
    fn near_neighbours(&self, within: u32) -> u8 {
        let (x, y, band) = (within % self.side, within / self.side, self.side / 2);
        let (n, e, s, w) = (y < band, x >= self.side - band, y >= self.side - band, x < band);
        [n, e, s, w, n && e, s && e, s && w, n && w].iter().enumerate().fold(0, |bits, (k, &near)| bits | (u8::from(near) << k))
    }
}

/// Maps `staging` after the work submitted so far, waiting at most [`DEVICE_WAIT_LIMIT`] (from
/// any thread: a save's worker waits here too).
fn map_and_wait(ctx: &GpuContext, staging: &wgpu::Buffer, what: &str) -> Result<()> {
    let state = Arc::new(AtomicU32::new(READ_PENDING));
    let flag = state.clone();
    staging.map_async(wgpu::MapMode::Read, .., move |r| flag.store(if r.is_ok() { READ_READY } else { READ_FAILED }, Ordering::Release));
    super::context::poll_until(&ctx.device, DEVICE_WAIT_LIMIT, what, || state.load(Ordering::Acquire) != READ_PENDING)?;
    ctx.check()?;
    if state.load(Ordering::Acquire) != READ_READY {
        return Err(Error::Gpu(format!("mapping {what} failed")));
    }
    Ok(())
}

/// The room the buffers give `needed` slots: an eighth more, at most [`MOST_SPARE_PAGES`], and
/// 16 (what a new world starts with).
fn with_spare(needed: usize) -> usize {
    needed + (needed / 8).min(MOST_SPARE_PAGES) + 16
}

/// Runs of `moves` (old slot, new slot), in new slot order, whose old slots follow each other
/// too, as (first old slot, first new slot, slots): one copy each.
fn moved_runs(moves: &[(u32, u32)]) -> Vec<(u64, u64, u64)> {
    let mut runs: Vec<(u64, u64, u64)> = Vec::new();
    for &(from, to) in moves {
        match runs.last_mut() {
            Some(run) if run.0 + run.2 == from as u64 && run.1 + run.2 == to as u64 => run.2 += 1,
            _ => runs.push((from as u64, to as u64, 1)),
        }
    }
    runs
}

/// The pages whose tiles' flags (`words`, for `tiles` in the same order) hold water, each with
/// the neighbours its water is near (bits in [`NEIGHBOURS`]' order), in page order. The plan's
/// tiles come a page's after another, the pages in order (update_residency), so one pass
/// gathers each page's bits: an entry of a map for each wet tile took 0.95 ms a read of a 4096²
/// world awake everywhere on the 2-core development machine, this pass 0.05–0.08 ms, and the
/// host's time a frame on an H200's host fell from 2.1–2.3 ms to 0.5–0.6 (docs/BENCHMARKS.md).
/// Tiles in another order are sorted first.
fn wet_pages(tiles: &[u32], words: &[u32], tiles_x: usize, per_page: usize) -> Vec<(usize, u8)> {
    let mut wet: Vec<(usize, u8)> = Vec::new();
    for (&t, &w) in tiles.iter().zip(words).filter(|(_, &w)| w & TILE_WET != 0) {
        let page = (t as usize / tiles_x / per_page) * tiles_x + t as usize % tiles_x;
        let near = (w / TILE_NEAR_NORTH) as u8;
        match wet.last_mut() {
            Some((last, bits)) if *last == page => *bits |= near,
            _ => wet.push((page, near)),
        }
    }
    if !wet.windows(2).all(|pair| pair[0].0 < pair[1].0) {
        wet.sort_by_key(|&(page, _)| page);
        wet.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 |= next.1;
            }
            same
        });
    }
    wet
}

/// Runs of consecutive values of sorted `tiles`, as (first, one past the last).
fn runs_of(tiles: &[usize]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &t in tiles {
        match runs.last_mut() {
            Some(run) if run.1 == t => run.1 = t + 1,
            _ => runs.push((t, t + 1)),
        }
    }
    runs
}

#[allow(clippy::too_many_arguments)]
fn field_groups(
    ctx: &GpuContext,
    fields: &Fields,
    uniforms: &wgpu::Buffer,
    counters: &wgpu::Buffer,
    tile_params: &wgpu::Buffer,
    lists: &[wgpu::Buffer; 2],
    flags: &[wgpu::Buffer; 2],
    water_edits: &DeviceList,
    terrain_edits: &DeviceList,
) -> ([wgpu::BindGroup; 2], [wgpu::BindGroup; 2]) {
    let device = &ctx.device;
    let step = [0, 1].map(|k| {
        bind(
            device,
            &ctx.step_layout,
            "world step",
            &[uniforms, &fields.terrain, &fields.depth[k], &fields.flux[k], &fields.depth[1 - k], &fields.flux[1 - k], counters, tile_params, &lists[k], &flags[k]],
        )
    });
    let edits = [0, 1].map(|k| bind(device, &ctx.edit_layout, "world edits", &[&fields.terrain, &fields.depth[k], counters, &water_edits.buffer, &terrain_edits.buffer]));
    (step, edits)
}

impl World {
    /// Runs `steps` steps with constants `c` (made for this world's size): edits first, then
    /// each step's plan and step, in frames of at most [`World::margin_steps`] steps, with the
    /// pages around the water resident before each.
    pub fn advance(&mut self, c: &StepConstants, steps: u32) -> Result<()> {
        if c.width != self.width || c.height != self.height {
            return Err(Error::invalid("step constants", format!("for a {}x{} grid", c.width, c.height), format!("constants made for the {}x{} world", self.width, self.height)));
        }
        self.ctx.check()?;
        let chunk = (self.margin_steps() / 2).max(1) as u32;
        let mut left = steps;
        loop {
            let now = left.min(chunk);
            self.frame(c, now)?;
            left -= now;
            if left == 0 {
                return Ok(());
            }
        }
    }

    fn frame(&mut self, c: &StepConstants, steps: u32) -> Result<()> {
        self.harvest(false)?;
        // The flags must be recent enough that the water cannot pass the pages made resident from
        // them within this frame's steps.
        while !self.residency_held && self.report.steps - self.observed_step + steps as u64 > self.margin_steps() {
            self.report.waits += 1;
            if !self.harvest(true)? {
                self.read_flags_now()?;
            }
        }
        self.update_residency(Some(c))?;
        let merge = self.merge_for(self.report.awake as usize);
        if merge != self.merge {
            self.merge = merge;
            self.ctx.queue.write_buffer(&self.planned, 4, bytemuck::bytes_of(&merge));
        }
        let queue = &self.ctx.queue;
        let change = constants_change(self.last_constants.as_ref(), c);
        self.last_constants = Some(*c);
        queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(c));
        queue.write_buffer(&self.tile_params, 0, bytemuck::bytes_of(&TileParams::new(&self.tiles, true, change)));
        // The marked tiles' words, in runs of neighbouring tiles.
        self.marked.sort_unstable();
        let runs = runs_of(&self.marked);
        for &(first, end) in &runs {
            queue.write_buffer(&self.wakes, 4 * first as u64, bytemuck::cast_slice(&self.marks[first..end]));
        }
        queue.write_buffer(&self.stats, 0, &[0u8; 16]);
        let water = self.take_water_edits();
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world frame") });
        let mode = StepMode::of(c);
        let holds = usize::from(self.held_count > 0);
        if self.step_pipelines[holds].as_ref().is_none_or(|(m, _)| *m != mode) {
            let mut constants = mode.overrides(&self.ctx.kernel).to_vec();
            constants.extend([("PAGE_SIDE", self.side as f64), ("TILE_ROWS", (self.side / self.tiles_per_page) as f64), ("FOCUS_HOLDS", holds as f64)]);
            let pipeline = self.ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("world step_columns"),
                layout: Some(&self.pipelines.layout),
                module: &self.pipelines.module,
                entry_point: Some("step_columns"),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, zero_initialize_workgroup_memory: false },
                cache: None,
            });
            self.step_pipelines[holds] = Some((mode, pipeline));
        }
        // Held pages an edit just wrote, or held since they last stepped, get both copies equal
        // after the edits and before the first step: a pass of its own for the edits then.
        let edits_apart = water > 0 && !self.held_syncs.is_empty();
        if edits_apart {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("world edits"), timestamp_writes: None });
            pass.set_pipeline(&self.ctx.apply_water);
            pass.set_bind_group(0, &self.edit_groups[self.current], &[]);
            pass.dispatch_workgroups((water as u32).div_ceil(EDIT_WORKGROUP).clamp(1, 65535), 1, 1);
        }
        self.record_held_syncs(&mut encoder);
        // The detail waves' frame, if one is queued: it reads the copy the first step reads.
        let fields = [&self.uniforms, &self.fields.terrain, &self.fields.depth[self.current], &self.fields.flux[self.current], &self.page_slots];
        let detail = match &mut self.detail {
            Some(layer) => layer.prepare(&self.ctx, fields)?,
            None => None,
        };
        let step = &self.step_pipelines[holds].as_ref().expect("made above").1;
        // At least one workgroup: its first invocation empties the next step's list.
        let groups = (self.planned_tiles.len() as u32).div_ceil(TILES_WORKGROUP).max(1);
        let mut timer = self.timer.take();
        let mut stamp = |pass: &mut wgpu::ComputePass, what: Stamp| {
            if let Some(timer) = &mut timer {
                timer.stamp_pass(pass, what);
            }
        };
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("world frame"), timestamp_writes: None });
            stamp(&mut pass, Stamp::FrameStart);
            if water > 0 && !edits_apart {
                pass.set_pipeline(&self.ctx.apply_water);
                pass.set_bind_group(0, &self.edit_groups[self.current], &[]);
                pass.dispatch_workgroups((water as u32).div_ceil(EDIT_WORKGROUP).clamp(1, 65535), 1, 1);
            }
            if let (Some(layer), Some(prepared)) = (&mut self.detail, &detail) {
                layer.dispatch(&mut pass, prepared);
            }
            for k in 0..steps {
                let copy = self.current;
                pass.set_pipeline(if k == 0 { &self.pipelines.plan_frame_start } else { &self.pipelines.plan_next_step });
                pass.set_bind_group(0, &self.plan_groups[copy], &[]);
                pass.set_bind_group(1, &self.page_group, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
                stamp(&mut pass, Stamp::Plan);
                pass.set_pipeline(step);
                pass.set_bind_group(0, &self.step_groups[copy], &[]);
                pass.set_bind_group(1, &self.page_group, &[]);
                pass.dispatch_workgroups_indirect(&self.lists[copy], 0);
                stamp(&mut pass, Stamp::Step);
                self.current = 1 - copy;
            }
            if steps > 0 {
                pass.set_pipeline(&self.pipelines.report_awake_tiles);
                pass.set_bind_group(0, &self.plan_groups[1 - self.current], &[]);
                pass.set_bind_group(1, &self.page_group, &[]);
                pass.dispatch_workgroups(1, 1, 1);
                stamp(&mut pass, Stamp::Other);
            }
        }
        self.timer = timer;
        self.report.steps += steps as u64;
        // The marks woke their tiles for this frame's first step.
        for (first, end) in runs {
            encoder.clear_buffer(&self.wakes, 4 * first as u64, Some(4 * (end - first) as u64));
            self.marks[first..end].iter_mut().for_each(|m| *m = 0);
        }
        self.marked.clear();
        let read = if steps > 0 { Some(self.record_flag_read(&mut encoder)?) } else { None };
        if let Some(timer) = &mut self.timer {
            timer.stamp_encoder(&mut encoder, Stamp::Other);
        }
        let detail_read = match (&mut self.detail, detail) {
            (Some(layer), Some(prepared)) => layer.finish(&mut encoder, prepared)?,
            _ => None,
        };
        self.ctx.queue.submit([encoder.finish()]);
        if let Some(k) = read {
            self.map_flag_read(k);
        }
        if let Some(layer) = &mut self.detail {
            layer.submitted(detail_read);
        }
        self.ctx.check()
    }

    /// Pages to keep: a page with water (as last seen, or put there by an edit since) and the
    /// neighbours its water is near hold water fields, as do the pages along an edge that
    /// exchanges water and every page around them; every neighbour of a page with water fields
    /// holds its terrain. Brings them in (terrain from the host, no water) and sends the others
    /// out.
    fn update_residency(&mut self, c: Option<&StepConstants>) -> Result<()> {
        let [tx, ty] = self.pages.tiles;
        let observed = self.observed_step;
        let wetted = self.wetted.len();
        self.wetted.retain(|&(_, _, step)| step >= observed);
        let edges = c.map(|c| c.boundary);
        if edges.is_some() && edges != self.residency_edges {
            self.residency_edges = edges;
            self.residency_stale = true;
        }
        if !self.residency_stale && wetted == self.wetted.len() && self.shrink_rule != ShrinkRule::EveryFrame {
            return Ok(());
        }
        self.residency_stale = false;
        // Per page near water or an exchanging edge: 1 terrain, 2 terrain and water fields (any
        // other page: nothing). Sparse and ordered: the work follows the water, not the world (a
        // 16384² world has 85 849 pages, a river a few hundred near it).
        let mut needed: std::collections::BTreeMap<usize, u8> = std::collections::BTreeMap::new();
        let (tx, ty) = (tx as i64, ty as i64);
        let neighbour = |page: usize, (dx, dy): (i64, i64)| {
            let (x, y) = (page as i64 % tx + dx, page as i64 / tx + dy);
            (x >= 0 && y >= 0 && x < tx && y < ty).then_some((y * tx + x) as usize)
        };
        // The page and its neighbours that `near` names get water fields (their terrain follows
        // below).
        let keep_around = |page: usize, near: u8, needed: &mut std::collections::BTreeMap<usize, u8>| {
            needed.insert(page, 2);
            for (k, &d) in NEIGHBOURS.iter().enumerate() {
                if near & (1 << k) != 0 {
                    if let Some(n) = neighbour(page, d) {
                        needed.insert(n, 2);
                    }
                }
            }
        };
        if self.residency_held {
            for &page in &self.resident {
                needed.insert(page, if self.slots[page][1] != ZERO_SLOT { 2 } else { 1 });
            }
        } else if let Some(c) = c {
            for page in self.exchanging_edge_pages(c) {
                keep_around(page, ALL_NEIGHBOURS, &mut needed);
            }
        }
        if !self.residency_held {
            for (&page, &near) in &self.wet {
                keep_around(page, near, &mut needed);
            }
        }
        for &(page, near, _) in &self.wetted {
            keep_around(page, near, &mut needed);
        }
        // A held page keeps its water fields whatever its flags say: it does not step, so flags
        // that never saw the water an edit put there (or that it held when first held) cannot
        // say it is wet. Its neighbours follow the water around it, and once it is released the
        // water it holds is kept around as an edit's is (set_held_pages).
        if self.held_count > 0 {
            for &page in &self.resident {
                if self.held[page] && self.slots[page][1] != ZERO_SLOT {
                    needed.insert(page, 2);
                }
            }
        }
        for p in &self.pending_water {
            if p.quanta > 0 {
                keep_around(p.page, self.near_neighbours(p.within), &mut needed);
            }
        }
        // A page with water fields steps only with its neighbours' terrain on the device.
        let watered: Vec<usize> = needed.iter().filter(|&(_, &n)| n >= 2).map(|(&p, _)| p).collect();
        for page in watered {
            for &d in &NEIGHBOURS {
                if let Some(n) = neighbour(page, d) {
                    needed.entry(n).or_insert(1);
                }
            }
        }
        let needed_of = |page: usize| needed.get(&page).copied().unwrap_or(0);
        let mut changed = false;
        let zero_flags = [0u32; 1];
        // Out first, so that their slots serve the pages coming in.
        let leaving: Vec<usize> = self.resident.iter().copied().filter(|&page| needed_of(page) < 2).collect();
        for page in leaving {
            let [terrain, water] = self.slots[page];
            if water != ZERO_SLOT {
                self.free_water.push(water);
                self.slots[page][1] = ZERO_SLOT;
                // Its flags said dry; cleared so that a page given water again starts from nothing.
                for tile in self.tiles_of(page) {
                    for flags in &self.flags {
                        self.ctx.queue.write_buffer(flags, 4 * tile as u64, bytemuck::cast_slice(&zero_flags));
                    }
                }
                changed = true;
            }
            if needed_of(page) < 1 && terrain != NO_PAGE {
                self.free_terrain.push(terrain);
                self.slots[page][0] = NO_PAGE;
                self.resident.remove(&page);
                self.report.freed += 1;
                changed = true;
            }
        }
        let coming_terrain: Vec<usize> = needed.keys().copied().filter(|&p| self.slots[p][0] == NO_PAGE).collect();
        let coming_water: Vec<usize> = needed.iter().filter(|&(&p, &n)| n >= 2 && self.slots[p][1] == ZERO_SLOT).map(|(&p, _)| p).collect();
        let terrain = self.resident.len() + coming_terrain.len();
        let water = self.watered_slot_count() + coming_water.len();
        if coming_terrain.len() > self.free_terrain.len() || coming_water.len() > self.free_water.len() {
            self.grow(terrain, water)?;
        } else if self.shrink(terrain, water) {
            changed = true;
        }
        let page_cells = (self.side * self.side) as u64;
        for &page in &coming_terrain {
            self.slots[page][0] = self.free_terrain.pop().expect("grow left room for every page coming in");
            self.resident.insert(page);
            self.upload_terrain(page);
            self.report.allocated += 1;
            changed = true;
        }
        let zeros = vec![0u8; (page_cells * 16) as usize];
        for &page in &coming_water {
            let slot = self.free_water.pop().expect("grow left room for every page coming in");
            self.slots[page][1] = slot;
            let at = slot as u64 * page_cells;
            for k in 0..2 {
                self.ctx.queue.write_buffer(&self.fields.depth[k], at * 4, &zeros[..(page_cells * 4) as usize]);
                self.ctx.queue.write_buffer(&self.fields.flux[k], at * 16, &zeros);
            }
            changed = true;
        }
        if changed {
            self.ctx.queue.write_buffer(&self.page_slots, 0, bytemuck::cast_slice(&self.slots));
            self.planned_tiles = self.resident.iter().filter(|&&p| self.slots[p][1] != ZERO_SLOT).flat_map(|&p| self.tiles_of(p)).map(|t| t as u32).collect();
            if self.planned_tiles.len() > self.planned_capacity {
                self.planned_capacity = self.planned_tiles.len() + self.planned_tiles.len() / 8 + 64;
                use wgpu::BufferUsages as U;
                let buffer = |label: &str, bytes: u64, usage: U| self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes, usage, mapped_at_creation: false });
                self.planned = buffer("planned tiles", 4 * (self.planned_capacity + PLANNED_HEADER) as u64, U::STORAGE | U::COPY_DST);
                self.planned_flags = buffer("planned flags", 4 * self.planned_capacity as u64, U::STORAGE | U::COPY_SRC);
                self.page_group = bind(&self.ctx.device, &self.pipelines.page_layout, "world pages", &[&self.page_slots, &self.planned, &self.planned_flags, &self.page_held]);
            }
            let mut words = Vec::with_capacity(self.planned_tiles.len() + PLANNED_HEADER);
            words.extend([self.planned_tiles.len() as u32, self.merge]);
            words.extend(&self.planned_tiles);
            self.ctx.queue.write_buffer(&self.planned, 0, bytemuck::cast_slice(&words));
        }
        Ok(())
    }

    /// Room for `terrain` pages' terrain and `water` pages' water fields: new buffers an eighth
    /// larger than needed (at most [`MOST_SPARE_PAGES`] larger), the old slots copied over,
    /// refused with the figure when the device cannot hold them.
    fn grow(&mut self, terrain: usize, water: usize) -> Result<()> {
        let page_cells = (self.side * self.side) as u64;
        let limit = self.ctx.limits.max_storage_buffer_binding_size.min(self.ctx.limits.max_buffer_size);
        // The pipes are the largest field; every page with water may be awake at once, one
        // workgroup each.
        let most = ((limit / (page_cells * 16)) as usize).min((self.ctx.limits.max_compute_workgroups_per_dimension / self.tiles_per_page) as usize);
        if water + 1 > most {
            return Err(Error::GpuUnavailable(format!(
                "the water needs {water} pages of {0}x{0} cells with water fields ({1:.1} MiB); {2} holds at most {3} in one binding of its pipes",
                self.side,
                (water as u64 * page_cells * BYTES_PER_RESIDENT_CELL) as f64 / (1u64 << 20) as f64,
                self.ctx.adapter.name,
                most - 1
            )));
        }
        let grown = |needed: usize, now: usize, most: usize| if needed > now { with_spare(needed).min(most) } else { now };
        let terrain_capacity = grown(terrain, self.fields.terrain_capacity, (limit / (page_cells * 4)) as usize);
        let water_capacity = grown(water + 1, self.fields.water_capacity, most);
        let fields = Fields::new(&self.ctx.device, terrain_capacity, water_capacity, page_cells);
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world grow") });
        let old = &self.fields;
        let (t, w) = (old.terrain_capacity as u64 * page_cells, old.water_capacity as u64 * page_cells);
        encoder.copy_buffer_to_buffer(&old.terrain, 0, &fields.terrain, 0, t * 4);
        for k in 0..2 {
            encoder.copy_buffer_to_buffer(&old.depth[k], 0, &fields.depth[k], 0, w * 4);
            encoder.copy_buffer_to_buffer(&old.flux[k], 0, &fields.flux[k], 0, w * 16);
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.free_terrain.splice(0..0, (old.terrain_capacity as u32..terrain_capacity as u32).rev());
        self.free_water.splice(0..0, (old.water_capacity as u32..water_capacity as u32).rev());
        self.fields = fields;
        self.rebind();
        Ok(())
    }

    /// Gives back the room the water no longer needs, with `terrain` pages' terrain and `water`
    /// pages' water fields to hold (those coming in this frame among them): where the slots in
    /// use fall to half the room or less, and [`LEAST_SHRINK_PAGES`] or more below it, new
    /// buffers of the room the grow rule gives them ([`with_spare`]), the live slots moved into
    /// the lowest slot numbers in page order ([`ShrinkRule`] for tests). A world drained dry
    /// comes back to a new world's room. The halving is the hysteresis: a shrunk world grows
    /// again only past the spare room it keeps, and shrinks again only once its water halves, so
    /// a world hovering about a size does not make buffers every frame. Returns whether the
    /// slots moved.
    ///
    /// Called where the host decides residency, before the frame's work is recorded, so nothing
    /// recorded later names an old slot. Nothing in flight does either: the flag reads and the
    /// plan name tiles, not slots; coarse and detail reads bind the fields when recorded and are
    /// submitted by then; a save's copy is recorded from the slots of the moment it is recorded
    /// (before a shrink, its copy is on the queue ahead of the move; after, it reads the new
    /// slots). Writes queued to the old buffers (terrain, flows, cleared slots) run ahead of the
    /// move's copy, which is submitted at once.
    fn shrink(&mut self, terrain: usize, water: usize) -> bool {
        let (terrain_now, water_now) = (self.fields.terrain_capacity, self.fields.water_capacity);
        // The water slots in use count the zero slot, as grow's do.
        let (terrain_room, water_room) = (with_spare(terrain).min(terrain_now), with_spare(water + 1).min(water_now));
        let spare = |used: usize, now: usize, room: usize| used <= now / 2 && now - used >= LEAST_SHRINK_PAGES && room < now;
        let (terrain_capacity, water_capacity) = match self.shrink_rule {
            ShrinkRule::Never => return false,
            ShrinkRule::EveryFrame => (terrain_room, water_room),
            ShrinkRule::WhenSpare => {
                let (t, w) = (spare(terrain, terrain_now, terrain_room), spare(water + 1, water_now, water_room));
                if !t && !w {
                    return false;
                }
                (if t { terrain_room } else { terrain_now }, if w { water_room } else { water_now })
            }
        };
        self.compact(terrain_capacity, water_capacity);
        self.report.shrinks += 1;
        true
    }

    /// Moves the fields into new buffers of `terrain_capacity` terrain and `water_capacity`
    /// water slots (room for every live slot), the resident pages' slots renumbered from the
    /// lowest in page order: one copy of each live slot's cells, both copies of depth and pipes
    /// (a held page's two included), submitted now; the free lists and bind groups follow.
    fn compact(&mut self, terrain_capacity: usize, water_capacity: usize) {
        let page_cells = (self.side * self.side) as u64;
        let fields = Fields::new(&self.ctx.device, terrain_capacity, water_capacity, page_cells);
        // (old slot, new slot) of each live slot, in new slot order.
        let (mut terrain_moves, mut water_moves) = (Vec::with_capacity(self.resident.len()), Vec::new());
        for &page in &self.resident {
            let [terrain, water] = self.slots[page];
            let slot = terrain_moves.len() as u32;
            terrain_moves.push((terrain, slot));
            self.slots[page][0] = slot;
            if water != ZERO_SLOT {
                let slot = water_moves.len() as u32 + 1;
                water_moves.push((water, slot));
                self.slots[page][1] = slot;
            }
        }
        debug_assert_eq!(self.slots.iter().filter(|s| s[1] != ZERO_SLOT).count(), water_moves.len(), "a page with water fields holds its terrain");
        debug_assert!(terrain_moves.len() <= terrain_capacity && water_moves.len() < water_capacity);
        let old = &self.fields;
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world shrink") });
        for (from, to, count) in moved_runs(&terrain_moves) {
            encoder.copy_buffer_to_buffer(&old.terrain, from * page_cells * 4, &fields.terrain, to * page_cells * 4, count * page_cells * 4);
        }
        for (from, to, count) in moved_runs(&water_moves) {
            for k in 0..2 {
                encoder.copy_buffer_to_buffer(&old.depth[k], from * page_cells * 4, &fields.depth[k], to * page_cells * 4, count * page_cells * 4);
                encoder.copy_buffer_to_buffer(&old.flux[k], from * page_cells * 16, &fields.flux[k], to * page_cells * 16, count * page_cells * 16);
            }
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.free_terrain = (terrain_moves.len() as u32..terrain_capacity as u32).rev().collect();
        self.free_water = (water_moves.len() as u32 + 1..water_capacity as u32).rev().collect();
        self.fields = fields;
        self.rebind();
    }

    /// When the fields move into smaller buffers as the water recedes ([`ShrinkRule`]): for
    /// tests, which compare a world that never shrinks with one whose slots move every frame.
    #[doc(hidden)]
    pub fn set_shrink_rule(&mut self, rule: ShrinkRule) {
        self.shrink_rule = rule;
    }

    /// Benchmarks: records timestamps between the dispatches of the next frames, up to
    /// `queries` of them, for [`World::dispatch_times`]. False, recording nothing, when the
    /// device was made without timestamps inside passes (`PIPEWATER_GPU_TIMESTAMPS=1` asks for
    /// them where the adapter has them).
    #[doc(hidden)]
    pub fn time_dispatches(&mut self, queries: u32) -> bool {
        self.timer = DispatchTimer::new(&self.ctx, queries);
        self.timer.is_some()
    }

    /// Benchmarks: what ended at each timestamp recorded since [`World::time_dispatches`] and
    /// when, in nanoseconds of the device's clock (waiting for the device); stops recording.
    #[doc(hidden)]
    pub fn dispatch_times(&mut self) -> Result<Vec<(Stamp, u64)>> {
        self.timer.take().map_or(Ok(Vec::new()), |timer| timer.read(&self.ctx))
    }

    fn rebind(&mut self) {
        let (step, edits) = field_groups(&self.ctx, &self.fields, &self.uniforms, &self.counters, &self.tile_params, &self.lists, &self.flags, &self.water_edits, &self.terrain_edits);
        self.step_groups = step;
        self.edit_groups = edits;
    }

    /// Uploads the pending water edits as slot cells, each cell's entries side by side in the
    /// order made (edits.wgsl); returns their count.
    fn take_water_edits(&mut self) -> usize {
        if self.pending_water.is_empty() {
            return 0;
        }
        let page_cells = self.side * self.side;
        // An edit writes the current copy only: a held page's other copy gets it before a step.
        for p in &self.pending_water {
            if self.held[p.page] && !self.held_syncs.contains(&p.page) {
                self.held_syncs.push(p.page);
            }
        }
        // Every page an edit names holds water fields by now (update_residency): those removing
        // water from a page without any have nothing to remove, and go to the zero slot's
        // cells, where they remove nothing.
        let mut items: Vec<(u32, i32)> = self.pending_water.drain(..).map(|p| (self.slots[p.page][1] * page_cells + p.within, p.quanta)).collect();
        items.sort_by_key(|&(cell, _)| cell);
        let bytes: Vec<u8> = items.iter().flat_map(|&(cell, q)| [cell.to_le_bytes(), q.to_le_bytes()].concat()).collect();
        if self.water_edits.upload(&self.ctx.device, &self.ctx.queue, "world water edits", &bytes) {
            self.rebind();
        }
        items.len()
    }

    /// Copies the last step's page flags and the frame's report into a free staging buffer: a
    /// new one while fewer than [`MAX_FLAG_READS`] are on their way, else the oldest once it
    /// arrives.
    fn record_flag_read(&mut self, encoder: &mut wgpu::CommandEncoder) -> Result<usize> {
        let free = |reads: &[FlagRead]| reads.iter().position(|r| r.state.load(Ordering::Acquire) == READ_FREE);
        let k = match free(&self.reads) {
            Some(k) => k,
            None if self.reads.len() < MAX_FLAG_READS => {
                self.reads.push(FlagRead { buffer: self.flag_read_buffer(), state: Arc::new(AtomicU32::new(READ_FREE)), step: 0, tiles: Vec::new() });
                self.reads.len() - 1
            }
            None => {
                self.harvest(true)?;
                free(&self.reads).expect("harvest frees the oldest read once it arrives")
            }
        };
        let count = self.planned_tiles.len();
        {
            // The plan's bindings for the step after the last: its flags before are the last
            // step's.
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("world flags"), timestamp_writes: None });
            pass.set_pipeline(&self.pipelines.gather_planned_flags);
            pass.set_bind_group(0, &self.plan_groups[self.current], &[]);
            pass.set_bind_group(1, &self.page_group, &[]);
            pass.dispatch_workgroups((count as u32).div_ceil(TILES_WORKGROUP).max(1), 1, 1);
        }
        let n = 4 * count as u64;
        if self.reads[k].buffer.size() < n + 16 {
            self.reads[k].buffer = self.flag_read_buffer();
        }
        if n > 0 {
            encoder.copy_buffer_to_buffer(&self.planned_flags, 0, &self.reads[k].buffer, 0, n);
        }
        encoder.copy_buffer_to_buffer(&self.stats, 0, &self.reads[k].buffer, n, 16);
        self.reads[k].step = self.report.steps;
        self.reads[k].tiles = self.planned_tiles.clone();
        Ok(k)
    }

    /// A staging buffer for the flags of as many tiles as the plan has room for, and the report.
    fn flag_read_buffer(&self) -> wgpu::Buffer {
        self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("page flags read"),
            // In words: a mapping's size is a multiple of four bytes.
            size: 4 * (self.planned_capacity as u64 + 4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn map_flag_read(&mut self, k: usize) {
        let state = self.reads[k].state.clone();
        state.store(READ_PENDING, Ordering::Release);
        self.reads[k].buffer.map_async(wgpu::MapMode::Read, .., move |r| state.store(if r.is_ok() { READ_READY } else { READ_FAILED }, Ordering::Release));
    }

    /// Takes in the flags that have arrived (with `wait`, waiting for the oldest pending one
    /// first: waiting for all would leave the device idle while the host records the next
    /// frame). Returns whether any were pending.
    fn harvest(&mut self, wait: bool) -> Result<bool> {
        let oldest = (0..self.reads.len()).filter(|&k| self.reads[k].state.load(Ordering::Acquire) == READ_PENDING).min_by_key(|&k| self.reads[k].step);
        if let (true, Some(k)) = (wait, oldest) {
            self.wait_until(|reads| reads[k].state.load(Ordering::Acquire) != READ_PENDING)?;
        } else {
            let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        }
        let mut order: Vec<usize> = (0..self.reads.len()).filter(|&k| self.reads[k].state.load(Ordering::Acquire) == READ_READY).collect();
        order.sort_by_key(|&k| self.reads[k].step);
        for k in order {
            {
                let read = &self.reads[k];
                let n = read.tiles.len();
                let bytes = read.buffer.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?;
                let words: &[u32] = bytemuck::cast_slice(&bytes[..4 * n + 16]);
                if read.step >= self.observed_step {
                    // The tiles, whether they ran alone or with the rest of their page.
                    self.report.awake = words[..n].iter().filter(|&&w| w & TILE_AWAKE != 0).count() as u32;
                    self.report.workgroups = words[n + 2];
                    // Only the planned tiles can hold water.
                    let wet = wet_pages(&read.tiles, &words[..n], self.tiles.tiles[0] as usize, self.tiles_per_page as usize);
                    if !wet.iter().copied().eq(self.wet.iter().map(|(&page, &near)| (page, near))) {
                        self.wet = wet.into_iter().collect();
                        self.residency_stale = true;
                    }
                    self.observed_step = read.step;
                }
                self.report.faults += words[n + 3] as u64;
            }
            self.reads[k].buffer.unmap();
            self.reads[k].state.store(READ_FREE, Ordering::Release);
        }
        if self.reads.iter().any(|r| r.state.load(Ordering::Acquire) == READ_FAILED) {
            return Err(Error::Gpu("mapping the world's page flags failed".into()));
        }
        Ok(oldest.is_some())
    }

    /// Reads the flags of the last step now, waiting for the device.
    fn read_flags_now(&mut self) -> Result<()> {
        if self.report.steps == 0 {
            return Ok(());
        }
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world flags") });
        let k = self.record_flag_read(&mut encoder)?;
        self.ctx.queue.submit([encoder.finish()]);
        self.map_flag_read(k);
        // The older reads arrive first.
        while self.reads[k].state.load(Ordering::Acquire) != READ_FREE {
            self.harvest(true)?;
        }
        Ok(())
    }

    fn wait_until(&self, done: impl Fn(&[FlagRead]) -> bool) -> Result<()> {
        super::context::poll_until(&self.ctx.device, DEVICE_WAIT_LIMIT, "the world's page flags", || done(&self.reads))
    }

    /// Depth (quanta) of every cell of the `w × h` region from (x, y), row-major: zero in pages
    /// that are not resident. Waits for the device.
    pub fn read_depth(&mut self, x: u32, y: u32, w: u32, h: u32) -> Result<Vec<i32>> {
        let [bytes] = self.read_region(x, y, w, h, [(4, |f: &Fields| &f.depth)])?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Stored pipe flows (E, S, SE, SW, m³/s) of the region's cells, as [`World::read_depth`].
    pub fn read_flow(&mut self, x: u32, y: u32, w: u32, h: u32) -> Result<Vec<[f32; 4]>> {
        let [bytes] = self.read_region(x, y, w, h, [(16, |f: &Fields| &f.flux)])?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// [`World::read_depth`] and [`World::read_flow`] of the same region in one submission and
    /// one wait for the device (what every region a query, a window, a body or the detail layer
    /// reads needs: one round trip instead of two).
    pub fn read_water(&mut self, x: u32, y: u32, w: u32, h: u32) -> Result<(Vec<i32>, Vec<[f32; 4]>)> {
        type Field = fn(&Fields) -> &[wgpu::Buffer; 2];
        let fields: [(u64, Field); 2] = [(4, |f| &f.depth), (16, |f| &f.flux)];
        let [depth, flow] = self.read_region(x, y, w, h, fields)?;
        Ok((bytemuck::pod_collect_to_vec(&depth), bytemuck::pod_collect_to_vec(&flow)))
    }

    /// The region's cells of each field of `fields` (bytes a cell, which field), row-major:
    /// copied page by page into one staging buffer, read after one wait.
    fn read_region<const N: usize>(&mut self, x: u32, y: u32, w: u32, h: u32, fields: [(u64, impl Fn(&Fields) -> &[wgpu::Buffer; 2]); N]) -> Result<[Vec<u8>; N]> {
        if x as u64 + w as u64 > self.width as u64 || y as u64 + h as u64 > self.height as u64 {
            return Err(Error::invalid("region", format!("{w}x{h} at ({x}, {y})"), format!("a region within the {}x{} world", self.width, self.height)));
        }
        self.flush_edits()?;
        let side = self.side;
        let page_cells = (side * side) as u64;
        let (px0, py0, px1, py1) = (x / side, y / side, (x + w).div_ceil(side), (y + h).div_ceil(side));
        let pages: Vec<(u32, u32)> = (py0..py1).flat_map(|py| (px0..px1).map(move |px| (px, py))).filter(|&(px, py)| self.slots[(py * self.pages.tiles[0] + px) as usize][1] != ZERO_SLOT).collect();
        // Each field's pages one after the other in the staging buffer.
        let mut starts = [0u64; N];
        let mut total = 0u64;
        for (start, (cell_bytes, _)) in starts.iter_mut().zip(&fields) {
            *start = total;
            total += pages.len() as u64 * page_cells * cell_bytes;
        }
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("world read"),
            size: total.max(16),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world read") });
        for (&start, (cell_bytes, field)) in starts.iter().zip(&fields) {
            let source = &field(&self.fields)[self.current];
            for (k, &(px, py)) in pages.iter().enumerate() {
                let slot = self.slots[(py * self.pages.tiles[0] + px) as usize][1] as u64;
                encoder.copy_buffer_to_buffer(source, slot * page_cells * cell_bytes, &staging, start + k as u64 * page_cells * cell_bytes, page_cells * cell_bytes);
            }
        }
        self.ctx.queue.submit([encoder.finish()]);
        map_and_wait(&self.ctx, &staging, "a world read")?;
        let mapped = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?;
        let outs = std::array::from_fn(|f| {
            let cb = fields[f].0 as usize;
            let at = starts[f] as usize;
            let mut out = vec![0u8; w as usize * h as usize * cb];
            for (k, &(px, py)) in pages.iter().enumerate() {
                let page = &mapped[at + k * (page_cells as usize) * cb..at + (k + 1) * (page_cells as usize) * cb];
                for row in 0..side {
                    let gy = py * side + row;
                    if gy < y || gy >= y + h {
                        continue;
                    }
                    let gx0 = (px * side).max(x);
                    let gx1 = ((px + 1) * side).min(x + w);
                    if gx0 >= gx1 {
                        continue;
                    }
                    let from = (row * side + gx0 - px * side) as usize * cb;
                    let to = ((gy - y) as usize * w as usize + (gx0 - x) as usize) * cb;
                    let len = (gx1 - gx0) as usize * cb;
                    out[to..to + len].copy_from_slice(&page[from..from + len]);
                }
            }
            out
        });
        drop(mapped);
        staging.unmap();
        Ok(outs)
    }

    /// The ledger's counters: water added and removed by edits, in and out through the edges.
    pub fn counters(&mut self) -> Result<Counters> {
        self.flush_edits()?;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("world counters read"), size: COUNTER_BYTES as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world counters") });
        encoder.copy_buffer_to_buffer(&self.counters, 0, &staging, 0, COUNTER_BYTES as u64);
        self.ctx.queue.submit([encoder.finish()]);
        map_and_wait(&self.ctx, &staging, "the world's counters")?;
        let counters = GpuHost::counters_from(&staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..COUNTER_BYTES]);
        staging.unmap();
        Ok(counters)
    }

    /// Water held in every resident page, quanta (pages that are not resident hold none).
    pub fn total_quanta(&mut self) -> Result<i64> {
        self.flush_edits()?;
        let page_cells = (self.side * self.side) as u64;
        let bytes = self.read_slots(&self.fields.depth[self.current].clone(), 4)?;
        let depth: &[i32] = bytemuck::cast_slice(&bytes);
        Ok(self.slots.iter().filter(|s| s[1] != ZERO_SLOT).map(|s| depth[(s[1] as u64 * page_cells) as usize..((s[1] as u64 + 1) * page_cells) as usize].iter().map(|&d| d as i64).sum::<i64>()).sum())
    }

    /// Applies the edits waiting for the next frame now (the pages they need brought in first),
    /// so that a read sees them.
    fn flush_edits(&mut self) -> Result<()> {
        if self.pending_water.is_empty() {
            return Ok(());
        }
        let c = self.last_constants;
        self.update_residency(c.as_ref())?;
        let water = self.take_water_edits();
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world edits") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("world edits"), timestamp_writes: None });
            pass.set_pipeline(&self.ctx.apply_water);
            pass.set_bind_group(0, &self.edit_groups[self.current], &[]);
            pass.dispatch_workgroups((water as u32).div_ceil(EDIT_WORKGROUP).clamp(1, 65535), 1, 1);
        }
        self.record_held_syncs(&mut encoder);
        self.ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Copies the depth and pipes of the pages in `held_syncs` from the current copy into the
    /// other, so that a held page holds its water in both, whichever a step reads.
    fn record_held_syncs(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let page_cells = (self.side * self.side) as u64;
        for page in std::mem::take(&mut self.held_syncs) {
            let slot = self.slots[page][1] as u64;
            if slot == ZERO_SLOT as u64 {
                continue;
            }
            let (from, to) = (self.current, 1 - self.current);
            encoder.copy_buffer_to_buffer(&self.fields.depth[from], slot * page_cells * 4, &self.fields.depth[to], slot * page_cells * 4, page_cells * 4);
            encoder.copy_buffer_to_buffer(&self.fields.flux[from], slot * page_cells * 16, &self.fields.flux[to], slot * page_cells * 16, page_cells * 16);
        }
    }

    /// Pages count along x and y.
    pub fn pages(&self) -> [u32; 2] {
        self.pages.tiles
    }

    /// The pages along the world's edges that exchange water under constants `c` (an open,
    /// inflow or level edge): on the device whatever the water does.
    pub fn exchanging_edge_pages<'a>(&'a self, c: &'a StepConstants) -> impl Iterator<Item = usize> + 'a {
        self.pages.edge_tiles().filter(move |&page| self.pages.on_exchanging_edge(c, page))
    }

    /// The pages the next frame starts from (row-major over [`World::pages`], ascending): those
    /// on the device and those edits put water in since, which come in before its first step.
    /// Water of the frame's steps reaches at most one page farther for every `side` steps.
    pub fn pages_in_play(&self) -> Vec<usize> {
        let mut pages: std::collections::BTreeSet<usize> = self.resident.clone();
        pages.extend(self.pending_water.iter().filter(|p| p.quanta > 0).map(|p| p.page));
        pages.extend(self.wetted.iter().map(|&(page, _, _)| page));
        pages.into_iter().collect()
    }

    /// Holds back the pages `held` marks (one a page, row-major over [`World::pages`]) from the
    /// next frame on, until a later call releases them: a held page does not step, and the pipes
    /// between it and the pages that step are closed on both sides (`cells_paged.wgsl`), so the
    /// ledger stays exact. What it wanted to step while held (a neighbour moved, an edit) it
    /// steps once released. Where the border between held and stepping pages moves, the pages on
    /// both sides of the change wake for the next step, as their step changes there. No page
    /// held is the world's step as it always was, bit for bit.
    pub fn set_held_pages(&mut self, held: &[bool]) -> Result<()> {
        if held.len() != self.held.len() {
            return Err(Error::invalid("held pages", held.len(), format!("one flag for each of the world's {} pages", self.held.len())));
        }
        if held == self.held.as_slice() {
            return Ok(());
        }
        let [tx, ty] = self.pages.tiles;
        let (tx, ty) = (tx as i64, ty as i64);
        let mut wake = Vec::new();
        for page in 0..held.len() {
            let (was, now) = (self.held[page], held[page]);
            if was == now {
                continue;
            }
            if now {
                // The copy the next step writes holds this page a step old.
                self.held_syncs.push(page);
            } else if self.slots[page][1] != ZERO_SLOT {
                // Kept with its neighbours until flags of a step after its release say where its
                // water is (update_residency).
                self.wetted.push((page, ALL_NEIGHBOURS, self.report.steps));
            }
            // A border between a held page and a stepping one is a wall: where one appears or
            // goes, the step of the cells beside it changes, and both sides step once.
            let (px, py) = (page as i64 % tx, page as i64 / tx);
            for y in (py - 1).max(0)..=(py + 1).min(ty - 1) {
                for x in (px - 1).max(0)..=(px + 1).min(tx - 1) {
                    let q = (y * tx + x) as usize;
                    if q != page && (self.held[q] != was) != (held[q] != now) {
                        wake.extend([page, q]);
                    }
                }
            }
        }
        wake.sort_unstable();
        wake.dedup();
        for page in wake {
            self.mark(page);
        }
        self.held.copy_from_slice(held);
        self.residency_stale = true;
        self.held_count = held.iter().filter(|&&h| h).count();
        self.report.held = self.held_count;
        let mut words = vec![0u32; held.len().div_ceil(32)];
        for (page, _) in held.iter().enumerate().filter(|(_, &h)| h) {
            words[page / 32] |= 1 << (page % 32);
        }
        self.ctx.queue.write_buffer(&self.page_held, 0, bytemuck::cast_slice(&words));
        Ok(())
    }

    /// Pages held back now ([`World::set_held_pages`]).
    pub fn held_pages(&self) -> &[bool] {
        &self.held
    }

    /// The whole of a field buffer's slots, `cell_bytes` a cell, waiting for the device.
    fn read_slots(&self, buffer: &wgpu::Buffer, cell_bytes: u64) -> Result<Vec<u8>> {
        let size = self.fields.water_capacity as u64 * (self.side * self.side) as u64 * cell_bytes;
        let staging = self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("world slots read"), size: size.max(16), usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world slots read") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.ctx.queue.submit([encoder.finish()]);
        map_and_wait(&self.ctx, &staging, "a world read")?;
        let bytes = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?[..size as usize].to_vec();
        staging.unmap();
        Ok(bytes)
    }
}

impl World {
    /// The world's save ([`crate::world_save`]): the terrain of the pages whose terrain was set
    /// and the depth and pipes of the pages holding water or flow, read from the device, with the
    /// ledger. Waits for it; [`World::begin_save`] does not.
    pub fn save(&mut self) -> Result<Vec<u8>> {
        let mut job = self.begin_save()?;
        let start = Instant::now();
        loop {
            if let Some(done) = self.poll_save(&mut job) {
                return done;
            }
            if start.elapsed() > DEVICE_WAIT_LIMIT {
                return Err(Error::DeviceLost(format!("the world's save did not arrive within {} s", DEVICE_WAIT_LIMIT.as_secs())));
            }
            // Not a blocking poll, whose timeout was taken for an error and which can panic
            // inside wgpu ([`super::context::poll_until`]): the worker needs time, not polls.
            let _ = self.ctx.device.poll(wgpu::PollType::Poll);
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Starts a save of the world without holding the caller: a worker makes the device buffer
    /// the water fields are copied into, and the first [`World::poll_save`] after it is made
    /// (normally the next frame's) records the copy, so the save holds the world as it is after
    /// the work submitted before that poll. Another worker brings the copy over and encodes it;
    /// the world steps on meanwhile, and [`World::poll_save`] hands the bytes over.
    pub fn begin_save(&mut self) -> Result<WorldSaveJob> {
        self.flush_edits()?;
        Ok(WorldSaveJob { stage: SaveStage::Making(self.make_save_buffer(self.watered_slot_count())) })
    }

    fn watered_slot_count(&self) -> usize {
        self.resident.iter().filter(|&&p| self.slots[p][1] != ZERO_SLOT).count()
    }

    /// A worker making a device buffer for the water of `pages` watered pages and a quarter more
    /// (pages wetted before the copy is recorded), with the ledger's counters.
    fn make_save_buffer(&self, pages: usize) -> std::thread::JoinHandle<wgpu::Buffer> {
        let page_bytes = (self.side * self.side) as u64 * 20;
        let bytes = (pages + pages / 4 + 1) as u64 * page_bytes + COUNTER_BYTES as u64;
        let ctx = self.ctx.clone();
        std::thread::spawn(move || {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("world save"),
                size: bytes,
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
    }

    /// Records the copy of the watered pages' depth and pipes (each page's depth, then its
    /// pipes) and the counters into `scratch`, and starts the worker that reads and encodes it.
    fn record_save(&mut self, scratch: wgpu::Buffer) -> std::thread::JoinHandle<Result<Vec<u8>>> {
        let page_cells = (self.side * self.side) as u64;
        let mut watered: Vec<(u64, u32)> = self.slots.iter().enumerate().filter(|(_, s)| s[1] != ZERO_SLOT).map(|(p, s)| (p as u64, s[1])).collect();
        watered.sort_unstable_by_key(|&(_, slot)| slot);
        let page_bytes = page_cells * 20;
        let water_bytes = watered.len() as u64 * page_bytes;
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world save") });
        // Consecutive slots in one copy each: the scratch holds the pages in slot order.
        let slots: Vec<usize> = watered.iter().map(|&(_, slot)| slot as usize).collect();
        let runs = runs_of(&slots);
        let mut at = 0u64;
        for &(first, end) in &runs {
            let count = (end - first) as u64;
            encoder.copy_buffer_to_buffer(&self.fields.depth[self.current], first as u64 * page_cells * 4, &scratch, at, count * page_cells * 4);
            encoder.copy_buffer_to_buffer(&self.fields.flux[self.current], first as u64 * page_cells * 16, &scratch, at + count * page_cells * 4, count * page_cells * 16);
            at += count * page_bytes;
        }
        encoder.copy_buffer_to_buffer(&self.counters, 0, &scratch, water_bytes, COUNTER_BYTES as u64);
        self.ctx.queue.submit([encoder.finish()]);
        let mut header = crate::world_save::WorldSave {
            width: self.width,
            height: self.height,
            side: self.side,
            ground: self.ground,
            counters: Counters::default(),
            steps: self.report.steps,
            terrain: Vec::new(),
            water: Vec::new(),
            sources: Vec::new(),
            inflow_carry: [0.0; 4],
        };
        let terrain: Vec<(u64, Arc<Vec<f32>>)> = self.terrain.iter().enumerate().filter_map(|(p, t)| t.clone().map(|t| (p as u64, t))).collect();
        let ctx = self.ctx.clone();
        std::thread::spawn(move || -> Result<Vec<u8>> {
            let read_bytes = water_bytes + COUNTER_BYTES as u64;
            let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("world save read"), size: read_bytes, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
            let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("world save read") });
            encoder.copy_buffer_to_buffer(&scratch, 0, &staging, 0, read_bytes);
            ctx.queue.submit([encoder.finish()]);
            map_and_wait(&ctx, &staging, "the world's save")?;
            drop(scratch);
            let page_cells = page_cells as usize;
            let bytes = {
                let mapped = staging.get_mapped_range(..).map_err(|e| Error::Gpu(e.to_string()))?;
                header.counters = GpuHost::counters_from(&mapped[water_bytes as usize..read_bytes as usize]);
                let (mut at, mut k) = (0usize, 0usize);
                // The pages in the runs' layout: a run's depths, then its pipes.
                for (first, end) in runs {
                    let count = end - first;
                    let depth: &[i32] = bytemuck::cast_slice(&mapped[at..at + count * page_cells * 4]);
                    let flux: &[[f32; 4]] = bytemuck::cast_slice(&mapped[at + count * page_cells * 4..at + count * page_cells * 20]);
                    for (i, &(page, _)) in watered[k..k + count].iter().enumerate() {
                        let (d, f) = (&depth[i * page_cells..(i + 1) * page_cells], &flux[i * page_cells..(i + 1) * page_cells]);
                        if d.iter().any(|&q| q != 0) || f.iter().flatten().any(|v| v.to_bits() != 0) {
                            header.water.push((page, d.to_vec(), f.to_vec()));
                        }
                    }
                    at += count * page_cells * 20;
                    k += count;
                }
                header.water.sort_unstable_by_key(|(page, _, _)| *page);
                header.terrain = terrain.into_iter().map(|(p, t)| (p, t.to_vec())).collect();
                header.encode()
            };
            staging.unmap();
            Ok(bytes)
        })
    }

    /// The save's bytes once they are ready (`None` until then; call once a frame). The
    /// caller's part is a look at the workers, and once, recording the copy.
    pub fn poll_save(&mut self, job: &mut WorldSaveJob) -> Option<Result<Vec<u8>>> {
        // Callbacks of other reads run on this thread's polls too.
        let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        match std::mem::replace(&mut job.stage, SaveStage::Handed) {
            SaveStage::Making(maker) if maker.is_finished() => {
                let Ok(scratch) = maker.join() else {
                    return Some(Err(Error::Gpu("the world save's buffer worker panicked".into())));
                };
                let page_bytes = (self.side * self.side) as u64 * 20;
                let watered = self.watered_slot_count();
                if watered as u64 * page_bytes + COUNTER_BYTES as u64 > scratch.size() {
                    // The water reached more pages than the buffer was made for.
                    job.stage = SaveStage::Making(self.make_save_buffer(watered));
                } else {
                    if let Err(e) = self.flush_edits() {
                        return Some(Err(e));
                    }
                    job.stage = SaveStage::Reading(self.record_save(scratch), self.report.steps);
                }
                None
            }
            SaveStage::Reading(worker, _) if worker.is_finished() => Some(worker.join().unwrap_or_else(|_| Err(Error::Gpu("the world save's worker panicked".into())))),
            SaveStage::Handed => Some(Err(Error::invalid("save job", "finished", "a save still on its way"))),
            waiting => {
                job.stage = waiting;
                None
            }
        }
    }

    /// A world from its save, on this device: pages cut again if this device's pages have
    /// another side; its water in place, woken for the first step; the ledger as saved.
    pub fn load(bytes: &[u8]) -> Result<World> {
        World::from_save(&crate::world_save::WorldSave::decode(bytes)?)
    }

    /// A world from a decoded save ([`World::load`]); its sources are the caller's.
    pub fn from_save(save: &crate::world_save::WorldSave) -> Result<World> {
        let mut world = World::new(save.width, save.height, save.ground)?;
        let [saved_x, _] = save.pages();
        let saved_side = save.side;
        // The saved pages' cells on the world, as (x, y) ranges of a saved page.
        let cells_of = |page: u64| {
            let (px, py) = ((page % saved_x) as u32, (page / saved_x) as u32);
            let (x0, y0) = (px * saved_side, py * saved_side);
            (x0, y0, saved_side.min(save.width - x0), saved_side.min(save.height - y0))
        };
        for (page, heights) in &save.terrain {
            let (x0, y0, w, h) = cells_of(*page);
            let region: Vec<f32> = (0..h).flat_map(|y| (0..w).map(move |x| heights[(y * saved_side + x) as usize])).collect();
            world.set_terrain_region(x0, y0, w, h, &region)?;
        }
        // The water, page by page of this world.
        let page_cells = (world.side * world.side) as usize;
        let mut water: std::collections::BTreeMap<usize, (Vec<i32>, Vec<[f32; 4]>)> = std::collections::BTreeMap::new();
        for (page, depth, flow) in &save.water {
            let (x0, y0, w, h) = cells_of(*page);
            for y in y0..y0 + h {
                for x in x0..x0 + w {
                    let from = ((y - y0) * saved_side + (x - x0)) as usize;
                    let (to_page, within) = world.page_cell(x, y);
                    let entry = water.entry(to_page).or_insert_with(|| (vec![0; page_cells], vec![[0.0; 4]; page_cells]));
                    entry.0[within] = depth[from];
                    entry.1[within] = flow[from];
                }
            }
        }
        for (&page, (depth, flow)) in &water {
            // The neighbours its water (or a pipe's flow) is near, as the flags would say.
            let near = (0..page_cells).filter(|&k| depth[k] > 0 || flow[k] != [0.0; 4]).fold(0, |near, k| near | world.near_neighbours(k as u32));
            world.wetted.push((page, near, 0));
            world.mark(page);
        }
        world.update_residency(None)?;
        for (page, (depth, flow)) in &water {
            let at = world.slots[*page][1] as u64 * page_cells as u64;
            for k in 0..2 {
                world.ctx.queue.write_buffer(&world.fields.depth[k], at * 4, bytemuck::cast_slice(depth));
                world.ctx.queue.write_buffer(&world.fields.flux[k], at * 16, bytemuck::cast_slice(flow));
            }
        }
        world.ctx.queue.write_buffer(&world.counters, 0, bytemuck::cast_slice(&save.counters.to_device_words()));
        world.ctx.check()?;
        Ok(world)
    }
}

#[cfg(test)]
mod tests {
    use super::{moved_runs, wet_pages, TILE_NEAR_NORTH, TILE_WET};
    use std::collections::BTreeMap;

    #[test]
    fn the_wet_pages_gather_each_pages_near_bits_in_any_order_of_tiles() {
        // A world 3 pages wide and 2 high of 4 tiles a page: each tile's flags wet or dry, near
        // bits from its number; the planned order (a page's tiles after another, pages in order),
        // that order reversed, and tiles interleaved across pages.
        let (tiles_x, per_page) = (3usize, 4usize);
        let planned: Vec<u32> = (0..6).flat_map(|p: usize| (0..per_page).map(move |k| ((p / tiles_x * per_page + k) * tiles_x + p % tiles_x) as u32)).collect();
        let flags = |t: u32| if t % 5 == 3 { 0 } else { TILE_WET | (((t * 37) % 256) * TILE_NEAR_NORTH) };
        let mut interleaved = planned.clone();
        interleaved.sort_by_key(|&t| (t % 7, t));
        for tiles in [planned.clone(), planned.iter().rev().copied().collect(), interleaved] {
            let words: Vec<u32> = tiles.iter().map(|&t| flags(t)).collect();
            let mut expected: BTreeMap<usize, u8> = BTreeMap::new();
            for (&t, &w) in tiles.iter().zip(&words).filter(|(_, &w)| w & TILE_WET != 0) {
                let page = (t as usize / tiles_x / per_page) * tiles_x + t as usize % tiles_x;
                *expected.entry(page).or_insert(0) |= (w / TILE_NEAR_NORTH) as u8;
            }
            let got = wet_pages(&tiles, &words, tiles_x, per_page);
            println!("tiles {tiles:?}\n  -> {got:?}");
            assert_eq!(got, expected.into_iter().collect::<Vec<_>>(), "one entry a wet page, its tiles' near bits together, in page order");
        }
    }

    #[test]
    fn a_shrink_copies_each_live_slot_once_in_runs() {
        // Pages in page order, their old slots scattered as a free list leaves them.
        let moves = [(5, 1), (6, 2), (7, 3), (2, 4), (3, 5), (9, 6), (11, 7), (12, 8)];
        let runs = moved_runs(&moves);
        let copied: Vec<(u32, u32)> = runs.iter().flat_map(|&(from, to, n)| (0..n).map(move |k| ((from + k) as u32, (to + k) as u32))).collect();
        println!("moves {moves:?} -> runs (from, to, slots) {runs:?}");
        assert_eq!(runs, vec![(5, 1, 3), (2, 4, 2), (9, 6, 1), (11, 7, 2)]);
        assert_eq!(copied, moves, "each live slot copied once, to its new slot");
        assert!(moved_runs(&[]).is_empty());
    }
}
