//! Ready-made states for tests, benchmarks and the demo.

use crate::grid::Grid;
use crate::params::NeighbourMode;
use crate::quanta::depth_to_quanta;
use crate::simulation::basin_fill;
use crate::state::State;

/// A small deterministic random generator (SplitMix64), so scenarios are the same everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }
}

/// Diamond-square fractal heights on a `(2ⁿ+1)²` lattice covering at least `width × height`,
/// resampled to the grid; values in `[0, 1]`. `roughness` in `0 ..= 1` (0.5 gives natural
/// hills; higher is more jagged).
pub fn diamond_square(width: u32, height: u32, seed: u64, roughness: f32) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    let side = (width.max(height).max(2) - 1).next_power_of_two() as usize + 1;
    let mut h = vec![0.0f32; side * side];
    let at = |x: usize, y: usize| y * side + x;
    for &(x, y) in &[(0, 0), (side - 1, 0), (0, side - 1), (side - 1, side - 1)] {
        h[at(x, y)] = rng.next_f32();
    }
    let mut step = side - 1;
    let mut amplitude = 1.0f32;
    let roughness = roughness.clamp(0.0, 1.0);
    while step > 1 {
        let half = step / 2;
        for y in (half..side).step_by(step) {
            for x in (half..side).step_by(step) {
                let mean = (h[at(x - half, y - half)] + h[at(x + half, y - half)] + h[at(x - half, y + half)] + h[at(x + half, y + half)]) * 0.25;
                h[at(x, y)] = mean + rng.range(-amplitude, amplitude) * 0.5;
            }
        }
        for y in (0..side).step_by(half) {
            let start = if (y / half) % 2 == 0 { half } else { 0 };
            for x in (start..side).step_by(step) {
                let mut sum = 0.0;
                let mut n = 0.0;
                for (dx, dy) in [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)] {
                    let (nx, ny) = (x as i64 + dx * half as i64, y as i64 + dy * half as i64);
                    if nx >= 0 && ny >= 0 && (nx as usize) < side && (ny as usize) < side {
                        sum += h[at(nx as usize, ny as usize)];
                        n += 1.0;
                    }
                }
                h[at(x, y)] = sum / n + rng.range(-amplitude, amplitude) * 0.5;
            }
        }
        amplitude *= 2.0f32.powf(-2.0 * (1.0 - roughness));
        step = half;
    }
    let (lo, hi) = h.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = (hi - lo).max(1e-6);
    let mut out = Vec::with_capacity(width as usize * height as usize);
    for y in 0..height as usize {
        for x in 0..width as usize {
            out.push((h[at(x, y)] - lo) / span);
        }
    }
    out
}

/// Still water `depth` metres deep over flat ground at height 0.
pub fn flat_pool(grid: Grid, depth: f32) -> State {
    let mut state = State::new(grid);
    state.depth.fill(depth_to_quanta(depth));
    state
}

/// A dam across the grid at column `dam_x`: water `upstream` m deep for `x < dam_x`, `downstream`
/// m beyond, over flat ground. The dam itself is not terrain: it is released at t = 0.
pub fn dam_break(grid: Grid, dam_x: u32, upstream: f32, downstream: f32) -> State {
    let mut state = State::new(grid);
    for y in 0..grid.height {
        for x in 0..grid.width {
            state.depth[grid.index(x, y)] = depth_to_quanta(if x < dam_x { upstream } else { downstream });
        }
    }
    state
}

/// A column of water `depth` m deep and `radius` m wide at the centre of a dry flat bed.
pub fn water_column(grid: Grid, radius: f32, depth: f32) -> State {
    let mut state = State::new(grid);
    for y in 0..grid.height {
        for x in 0..grid.width {
            let [px, pz] = grid.cell_centre(x, y);
            if px.hypot(pz) <= radius {
                state.depth[grid.index(x, y)] = depth_to_quanta(depth);
            }
        }
    }
    state
}

/// Rough fractal terrain (`relief` m high) under a lake filled to `level` m: still water that
/// must stay still.
///
/// # Panics
/// When `level` stands more than [`crate::MAX_DEPTH`] above the terrain (a test fixture's
/// mistake).
pub fn rough_lake(grid: Grid, seed: u64, relief: f32, level: f32) -> State {
    let terrain: Vec<f32> = diamond_square(grid.width, grid.height, seed, 0.6).into_iter().map(|h| h * relief).collect();
    let mut state = State { terrain, ..State::new(grid) };
    state.fill_to_level(level).expect("rough_lake: `level` lies within MAX_DEPTH of the terrain");
    state
}

/// The benchmark scene: a 4 m-relief fractal lake filled to 2 m with a 1.5 m block of water
/// raised over the second quarter of each axis, so that fronts, limiting and still water all
/// occur. Both backends' benchmarks measure this state.
pub fn benchmark_lake(grid: Grid) -> State {
    let mut state = rough_lake(grid, 42, 4.0, 2.0);
    for y in grid.height / 4..grid.height / 2 {
        for x in grid.width / 4..grid.width / 2 {
            state.depth[grid.index(x, y)] += depth_to_quanta(1.5);
        }
    }
    state
}

/// A source in a scenario: where (local XZ, m), how much (m³/s) and how wide (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceSpec {
    /// Local X, m.
    pub x: f32,
    /// Local Z, m.
    pub z: f32,
    /// m³/s.
    pub rate: f32,
    /// m.
    pub radius: f32,
}

/// A valley that falls along local +X into a basin, with hills from diamond-square, a dry bed,
/// and a spring at its head. Terrain heights span about `relief` m.
pub fn river_valley(grid: Grid, seed: u64, relief: f32) -> (State, SourceSpec) {
    let noise = diamond_square(grid.width, grid.height, seed, 0.55);
    let mut terrain = vec![0.0f32; grid.cell_count()];
    let (w, h) = (grid.width as f32, grid.height as f32);
    for y in 0..grid.height {
        for x in 0..grid.width {
            let u = (x as f32 + 0.5) / w;
            let v = (y as f32 + 0.5) / h;
            // The valley floor meanders a little and falls from west to east.
            let centre = 0.5 + 0.12 * (u * std::f32::consts::TAU * 1.5).sin();
            let across = ((v - centre).abs() * 2.0).min(1.0);
            let slope = 0.35 * (1.0 - u);
            let banks = across.powf(1.5) * 0.6;
            // A basin in the east third holds a lake.
            let basin = -0.25 * (1.0 - ((u - 0.8).hypot(v - 0.5) / 0.18).min(1.0)).powi(2);
            let i = grid.index(x, y);
            terrain[i] = relief * (slope + banks + basin + 0.12 * noise[i]);
        }
    }
    let state = State { terrain, ..State::new(grid) };
    let [sx, sz] = grid.cell_centre(grid.width / 12, grid.height / 2);
    let spec = SourceSpec { x: sx, z: sz, rate: relief * grid.cell_size * grid.cell_size * 0.5, radius: grid.cell_size * 2.5 };
    (state, spec)
}

/// The demo's landscape: what `cargo xtask demo` renders headless and what the Godot demo
/// (`godot_project/demo/landscape.gd`, a line-by-line port) builds.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoLandscape {
    /// Terrain, with the reservoir behind the dam and the lake already filled.
    pub state: State,
    /// The spring at the head of the valley.
    pub source: SourceSpec,
    /// Local X, Z (m) of the dam's crest on the river's centre line: dig here to breach it.
    pub dam: [f32; 2],
    /// Height (local Y, m) of the dam's crest on the centre line, noise left out.
    pub dam_crest: f32,
    /// Water level of the reservoir behind the dam, local Y, m.
    pub reservoir_level: f32,
    /// Water level of the lake in the basin below the dam, local Y, m.
    pub lake_level: f32,
}

/// Where across the grid (`v`, 0..1 along local +Z) the river's centre line runs at `u` (0..1
/// along local +X).
pub fn demo_centre_line(u: f32) -> f32 {
    0.5 + 0.12 * (u * std::f32::consts::TAU).sin()
}

/// Fraction of the grid's width (local X) where the dam stands.
pub const DEMO_DAM_U: f32 = 0.52;
/// Fraction of the grid's width where the reservoir is filled from, on the river's centre line
/// upstream of the dam.
pub const DEMO_RESERVOIR_U: f32 = 0.44;

/// Terrain height of the demo landscape at `(u, v)` (0..1 across the grid) in units of the
/// relief, before noise: a valley falling along +X, a dam of terrain across it at
/// [`DEMO_DAM_U`] and a basin for a lake further down.
pub fn demo_shape(u: f32, v: f32) -> f32 {
    let centre = demo_centre_line(u);
    let across = ((v - centre).abs() * 4.0).min(1.0);
    let slope = DEMO_SLOPE * (1.0 - u);
    let banks = 0.7 * ((across - 0.15).max(0.0) / 0.85).powf(1.5);
    let t = ((u - DEMO_DAM_U) / 0.035).abs().min(1.0);
    let dam = DEMO_DAM_HEIGHT * (1.0 - t * t) * (1.0 - t * t);
    let basin_r = ((u - 0.82).hypot(v - demo_centre_line(0.82)) / 0.16).min(1.0);
    let basin = -0.3 * (1.0 - basin_r) * (1.0 - basin_r);
    slope + banks + dam + basin
}

/// Fall of the valley floor from the west edge to the east edge, in units of the relief.
pub const DEMO_SLOPE: f32 = 0.30;
/// Height of the dam above the valley floor, in units of the relief.
pub const DEMO_DAM_HEIGHT: f32 = 0.22;
/// Depth of the reservoir at the dam, in units of the relief (the crest is higher by
/// `DEMO_DAM_HEIGHT − DEMO_RESERVOIR_DEPTH`).
pub const DEMO_RESERVOIR_DEPTH: f32 = 0.17;
/// Amplitude of the diamond-square hills, in units of the relief.
pub const DEMO_NOISE: f32 = 0.05;

/// The demo landscape on `grid`: a river valley falling along local +X with a spring at its head
/// (`0.6 · relief · cell_size²` m³/s), a dam of terrain across the valley at [`DEMO_DAM_U`] of the
/// width holding back a reservoir (the basin behind it filled, from [`DEMO_RESERVOIR_U`], to
/// [`DEMO_RESERVOIR_DEPTH`]` · relief` above the valley floor at the dam, below its crest), and a
/// lake (filled to height 0) in a basin below. Hills from [`diamond_square`] with `seed` and
/// `roughness` add [`DEMO_NOISE`]` · relief` of noise. Terrain spans about `relief` m. Deterministic: the same arguments give the same state everywhere.
///
/// # Panics
/// When `relief` is so large (past about 2000 m) that the lake or the reservoir would be deeper
/// than [`crate::MAX_DEPTH`].
pub fn demo_landscape(grid: Grid, seed: u64, roughness: f32, relief: f32) -> DemoLandscape {
    let noise = diamond_square(grid.width, grid.height, seed, roughness);
    let (w, h) = (grid.width as f32, grid.height as f32);
    let mut terrain = vec![0.0f32; grid.cell_count()];
    for y in 0..grid.height {
        for x in 0..grid.width {
            let (u, v) = ((x as f32 + 0.5) / w, (y as f32 + 0.5) / h);
            let i = grid.index(x, y);
            terrain[i] = relief * (demo_shape(u, v) + DEMO_NOISE * noise[i]);
        }
    }
    let floor_at_dam = DEMO_SLOPE * (1.0 - DEMO_DAM_U);
    let reservoir_level = relief * (floor_at_dam + DEMO_RESERVOIR_DEPTH);
    let lake_level = 0.0;
    let mut state = State { terrain, ..State::new(grid) };
    // The lake: the valley above the dam lies higher than the lake's level everywhere.
    state.fill_to_level(lake_level).expect("demo_landscape: the lake's level lies within MAX_DEPTH of the terrain");
    // The reservoir: the basin behind the dam, filled as `Simulation::fill_basin` would.
    let start = (((DEMO_RESERVOIR_U * w) as u32).min(grid.width - 1), ((demo_centre_line(DEMO_RESERVOIR_U) * h) as u32).min(grid.height - 1));
    for cell in basin_fill(&state, start, reservoir_level, NeighbourMode::Eight).expect("demo_landscape: the reservoir lies within MAX_DEPTH of the terrain") {
        state.depth[cell.cell as usize] += cell.quanta;
    }
    let to_local = |u: f32, v: f32| [(u - 0.5) * w * grid.cell_size, (v - 0.5) * h * grid.cell_size];
    let source_u = 0.06;
    let [sx, sz] = to_local(source_u, demo_centre_line(source_u));
    let source = SourceSpec { x: sx, z: sz, rate: 0.6 * relief * grid.cell_size * grid.cell_size, radius: grid.cell_size * 3.0 };
    DemoLandscape {
        state,
        source,
        dam: to_local(DEMO_DAM_U, demo_centre_line(DEMO_DAM_U)),
        dam_crest: relief * (floor_at_dam + DEMO_DAM_HEIGHT),
        reservoir_level,
        lake_level,
    }
}
