//! The one parameter set of the model, shared by every backend.

use crate::error::{check_range, Error, Result};
use crate::quanta::MAX_TERRAIN_ABS;

/// Which neighbours a cell exchanges water with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NeighbourMode {
    /// Four orthogonal pipes (E, S and the neighbours' pipes from W and N). Cheaper, but fronts
    /// spread as diamonds rather than circles.
    Four,
    /// All eight neighbours. Orthogonal pipes are 2/3 of a cell wide and diagonal pipes √2/6,
    /// the weights of the isotropic nine-point Laplacian, so fronts spread as circles.
    #[default]
    Eight,
    /// Six neighbours on a triangular lattice (hexagonal cells): odd rows lie half a cell further
    /// along local +X and rows lie `cell_size·√3/2` apart along +Z, so every cell is `cell_size`
    /// from its six neighbours, E and W in its row and two in each row beside it: `(x, y±1)` and
    /// `(x−1, y±1)` on even rows, `(x, y±1)` and `(x+1, y±1)` on odd rows (the eight-neighbour
    /// pipes with one diagonal per row masked). Every pipe is `cell_size/√3` wide (the face of
    /// the hexagon), a cell covers `cell_size²·√3/2`, and the six-point Laplacian this makes is
    /// isotropic, so fronts spread as circles; for hex maps. Momentum advection is not yet
    /// written for this lattice: steps here are pressure-driven ([`Params::advects`] is false).
    /// Erosion is refused here ([`Params::validate`]). See `docs/MODEL.md`.
    Triangular,
}

impl NeighbourMode {
    /// Every mode, in the order of the Godot enum and the save code.
    pub const ALL: [NeighbourMode; 3] = [NeighbourMode::Four, NeighbourMode::Eight, NeighbourMode::Triangular];

    /// The mode's name, as parameters and documents call it.
    pub fn name(self) -> &'static str {
        match self {
            NeighbourMode::Four => "four",
            NeighbourMode::Eight => "eight",
            NeighbourMode::Triangular => "triangular",
        }
    }

    /// The mode called `name` ([`NeighbourMode::name`]; also `"4"`, `"8"`, `"6"`/`"hex"`), or an
    /// error that names the accepted values.
    pub fn from_name(name: &str) -> Result<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "four" | "4" => Ok(NeighbourMode::Four),
            "eight" | "8" => Ok(NeighbourMode::Eight),
            "triangular" | "6" | "hex" | "six" => Ok(NeighbourMode::Triangular),
            _ => Err(Error::invalid("neighbours", name, "four, eight or triangular")),
        }
    }

    /// Area of one cell, m², for cells `cell_size` apart: `cell_size²`, or the hexagon
    /// `cell_size²·√3/2` on the triangular lattice. Depth is volume over this area.
    pub fn cell_area(self, cell_size: f32) -> f64 {
        let square = cell_size as f64 * cell_size as f64;
        match self {
            NeighbourMode::Four | NeighbourMode::Eight => square,
            NeighbourMode::Triangular => square * TRIANGULAR_AREA_RATIO,
        }
    }
}

/// Area of a cell of the triangular lattice over the square of its spacing: `√3/2`, the hexagon
/// whose faces lie halfway to its six neighbours.
pub const TRIANGULAR_AREA_RATIO: f64 = 0.866_025_403_784_438_6;

/// Distance between rows of the triangular lattice over the cell size: `√3/2`.
pub const TRIANGULAR_ROW_SPACING: f32 = 0.866_025_4;

/// Width of a pipe of the triangular lattice over the cell size: `1/√3`, the face between two
/// neighbouring hexagonal cells ([`Params::pipe_widths`]).
pub const TRIANGULAR_FACE_RATIO: f32 = 0.577_350_26;

/// How the cross-section of a pipe is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrossSection {
    /// Constant cross-section `pipe width × pipe_depth`: the classic game-tuned pipe model.
    /// Waves travel at √(g·pipe_depth) whatever the water depth.
    Classic,
    /// Cross-section `pipe width × face depth`, where the face depth is the water above the higher
    /// of the two beds: the shallow-water equations, with small waves travelling at √(g·d).
    #[default]
    DepthDependent,
}

/// What happens at one edge of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Boundary {
    /// Closed: no water crosses the edge.
    #[default]
    Wall,
    /// Free outfall: each edge cell loses water at critical flow, `d·√(g·d)` m³/s per metre of
    /// edge, as if the terrain dropped away beyond the edge.
    Open,
    /// Water enters through the edge at `rate` m³/s in total, spread evenly over its cells.
    Inflow {
        /// Total inflow of the edge, m³/s, `0 ..= 1e6`.
        rate: f32,
    },
    /// A water body beyond the edge whose surface stands at `level` (a sea, or a lake beyond the
    /// map): water flows in or out across the edge until the edge cells' surface is at `level`.
    /// Each edge cell exchanges `cell_size · c · (η − level)` m³/s with it, `c = √(g·d)` the
    /// speed of small waves (a Flather condition), so waves reaching the edge leave the map
    /// instead of reflecting. What crosses counts as boundary inflow and outflow in the ledger.
    Level {
        /// Surface of the water beyond the edge, local metres, `−1e6 ..= 1e6`.
        level: f32,
    },
}

/// One edge of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// `y = 0`, local −Z.
    North = 0,
    /// `x = width − 1`, local +X.
    East = 1,
    /// `y = height − 1`, local +Z.
    South = 2,
    /// `x = 0`, local −X.
    West = 3,
}

impl Edge {
    /// All edges, in index order.
    pub const ALL: [Edge; 4] = [Edge::North, Edge::East, Edge::South, Edge::West];
}

/// Largest inflow rate of one edge, m³/s.
pub const MAX_INFLOW_RATE: f32 = 1.0e6;

/// Largest [`Params::max_step`], s: the longest step [`crate::Simulation::advance`] ever takes.
/// Sources and inflow edges are checked against it: what they add to one cell in a step this
/// long must fit in the cell.
pub const LONGEST_STEP: f32 = 1.0;

/// The valid range of one parameter: a row of [`PARAM_RANGES`], the one table that
/// [`Params::validate`] checks against and that an engine's property checks and editor hints
/// read, so that they cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamRange {
    /// The parameter's name, as [`Params`] and its errors call it.
    pub name: &'static str,
    /// Smallest valid value.
    pub min: f32,
    /// Largest valid value.
    pub max: f32,
    /// Unit, as messages print it after a value (empty for a pure number).
    pub unit: &'static str,
}

impl ParamRange {
    /// `value` when it is finite and within `min ..= max`, else an error that names the
    /// parameter and the range.
    pub fn check(&self, value: f32) -> Result<f32> {
        check_range(self.name, value, self.min, self.max)
    }
}

/// Valid [`Params::gravity`].
pub const GRAVITY_RANGE: ParamRange = ParamRange { name: "gravity", min: 0.0, max: 100.0, unit: "m/s²" };
/// Valid [`Params::damping`].
pub const DAMPING_RANGE: ParamRange = ParamRange { name: "damping", min: 0.0, max: 1.0, unit: "per second" };
/// Valid [`Params::pipe_depth`].
pub const PIPE_DEPTH_RANGE: ParamRange = ParamRange { name: "pipe_depth", min: 1.0e-3, max: 1.0e3, unit: "m" };
/// Valid [`Params::cfl`].
pub const CFL_RANGE: ParamRange = ParamRange { name: "cfl", min: 0.01, max: 1.0, unit: "" };
/// Valid [`Params::max_step`].
pub const MAX_STEP_RANGE: ParamRange = ParamRange { name: "max_step", min: 1.0e-4, max: LONGEST_STEP, unit: "s" };
/// Valid [`Params::max_substeps`] (whole numbers).
pub const MAX_SUBSTEPS_RANGE: ParamRange = ParamRange { name: "max_substeps", min: 1.0, max: 100_000.0, unit: "" };
/// Valid rate of a [`Boundary::Inflow`] edge.
pub const INFLOW_RATE_RANGE: ParamRange = ParamRange { name: "inflow_rate", min: 0.0, max: MAX_INFLOW_RATE, unit: "m³/s" };
/// Valid level of a [`Boundary::Level`] edge.
pub const BOUNDARY_LEVEL_RANGE: ParamRange = ParamRange { name: "boundary_level", min: -MAX_TERRAIN_ABS, max: MAX_TERRAIN_ABS, unit: "m" };

/// Valid [`Params::viscosity`]: from none through water (10⁻⁶) and mud to lava (10² ..= 10⁴).
pub const VISCOSITY_RANGE: ParamRange = ParamRange { name: "viscosity", min: 0.0, max: 1.0e4, unit: "m²/s" };
/// Valid [`Params::solidify_rate`]: 0 (off) up to a metre of still fluid a second.
pub const SOLIDIFY_RATE_RANGE: ParamRange = ParamRange { name: "solidify_rate", min: 0.0, max: 1.0, unit: "m/s" };

/// Kinematic viscosity of water at 20 °C, m²/s: the default [`Params::viscosity`]. It is the
/// constant the step's thin-film drag always used, so water runs as it did before the parameter.
pub const WATER_VISCOSITY: f32 = 1.0e-6;

/// Valid [`ErosionParams::capacity`].
pub const EROSION_CAPACITY_RANGE: ParamRange = ParamRange { name: "erosion_capacity", min: 0.0, max: 10.0, unit: "s" };
/// Valid [`ErosionParams::dissolve_rate`].
pub const EROSION_DISSOLVE_RATE_RANGE: ParamRange = ParamRange { name: "erosion_dissolve_rate", min: 0.0, max: 1000.0, unit: "per second" };
/// Valid [`ErosionParams::deposit_rate`].
pub const EROSION_DEPOSIT_RATE_RANGE: ParamRange = ParamRange { name: "erosion_deposit_rate", min: 0.0, max: 1000.0, unit: "per second" };
/// Valid [`ErosionParams::min_tilt`].
pub const EROSION_MIN_TILT_RANGE: ParamRange = ParamRange { name: "erosion_min_tilt", min: 0.0, max: 1.0, unit: "" };
/// Valid [`ErosionParams::talus_angle`].
pub const EROSION_TALUS_ANGLE_RANGE: ParamRange = ParamRange { name: "erosion_talus_angle", min: 1.0, max: 89.0, unit: "°" };
/// Valid [`ErosionParams::thermal_rate`].
pub const EROSION_THERMAL_RATE_RANGE: ParamRange = ParamRange { name: "erosion_thermal_rate", min: 0.0, max: 1000.0, unit: "per second" };

/// Every parameter's valid range, by name.
pub const PARAM_RANGES: [ParamRange; 16] = [
    GRAVITY_RANGE,
    DAMPING_RANGE,
    PIPE_DEPTH_RANGE,
    CFL_RANGE,
    MAX_STEP_RANGE,
    MAX_SUBSTEPS_RANGE,
    INFLOW_RATE_RANGE,
    BOUNDARY_LEVEL_RANGE,
    VISCOSITY_RANGE,
    SOLIDIFY_RATE_RANGE,
    EROSION_CAPACITY_RANGE,
    EROSION_DISSOLVE_RATE_RANGE,
    EROSION_DEPOSIT_RATE_RANGE,
    EROSION_MIN_TILT_RANGE,
    EROSION_TALUS_ANGLE_RANGE,
    EROSION_THERMAL_RATE_RANGE,
];

/// Hydraulic and thermal erosion ([`crate::erosion`]), after Mei, Decaudin and Hu (2007): the
/// water dissolves ground where it runs fast over a slope, carries it as sediment and lets it
/// settle where it slows; slopes steeper than the talus angle slide. Off by default; while off
/// the step is exactly what it is without erosion. Runs on the CPU backend only (GPU backends
/// refuse it with an error).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErosionParams {
    /// Whether erosion runs. Default off.
    pub enabled: bool,
    /// `Kc`, seconds, `0 ..= 10`: the sediment (m of ground per cell) water can carry is
    /// `Kc · max(sin α, min_tilt) · |v|`, with `α` the local tilt of the ground and `|v|` the
    /// water's speed. Default 0.05 (5 cm at 1 m/s down a sine-1 slope).
    pub capacity: f32,
    /// `Ks`, per second, `0 ..= 1000`: where water carries less than it can, ground dissolves
    /// at `Ks · (C − s)` m/s. Default 0.5.
    pub dissolve_rate: f32,
    /// `Kd`, per second, `0 ..= 1000`: where water carries more than it can, sediment settles
    /// at `Kd · (s − C)` m/s. Default 1.
    pub deposit_rate: f32,
    /// Smallest tilt (a sine, `0 ..= 1`) the capacity uses, so that water running over flat ground
    /// still carries and digs a little (the paper's implementations keep one). Default 0.05.
    pub min_tilt: f32,
    /// Talus angle, degrees, `1 ..= 89`: ground steeper than this between neighbours slides down.
    /// Default 45.
    pub talus_angle: f32,
    /// Rate of the slide, per second, `0 ..= 1000` (0: no thermal erosion): each step a cell
    /// sheds `min(1, rate·dt)/16` of its excess over the talus slope towards each lower
    /// neighbour. Default 1.
    pub thermal_rate: f32,
}

impl Default for ErosionParams {
    fn default() -> Self {
        ErosionParams { enabled: false, capacity: 0.05, dissolve_rate: 0.5, deposit_rate: 1.0, min_tilt: 0.05, talus_angle: 45.0, thermal_rate: 1.0 }
    }
}

impl ErosionParams {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<()> {
        EROSION_CAPACITY_RANGE.check(self.capacity)?;
        EROSION_DISSOLVE_RATE_RANGE.check(self.dissolve_rate)?;
        EROSION_DEPOSIT_RATE_RANGE.check(self.deposit_rate)?;
        EROSION_MIN_TILT_RANGE.check(self.min_tilt)?;
        EROSION_TALUS_ANGLE_RANGE.check(self.talus_angle)?;
        EROSION_THERMAL_RATE_RANGE.check(self.thermal_rate)?;
        Ok(())
    }
}

/// Parameters of the model. Validated by [`Params::validate`]; every backend reads the same set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Gravitational acceleration, m/s², `0 ..= 100`. Default 9.81.
    pub gravity: f32,
    /// Fraction of pipe flux lost per second, `0 ..= 1`. Applied as `(1 − damping)^dt`, so the
    /// result does not depend on the step length. Default 0.02.
    pub damping: f32,
    /// Four or eight neighbours on a square grid, or six on a triangular lattice. Default eight.
    pub neighbours: NeighbourMode,
    /// Constant or depth-dependent pipe cross-section. Default depth-dependent.
    pub cross_section: CrossSection,
    /// Depth of the pipe cross-section in [`CrossSection::Classic`] mode, metres, `0.001 ..= 1000`.
    /// Default 1.
    pub pipe_depth: f32,
    /// Momentum advection in [`CrossSection::DepthDependent`] mode: water carries its velocity
    /// with it (see [`crate::pipes::advect`]), so a flood's front runs out at the speed of the
    /// shallow-water equations and bores move at the right speed. Off, the pipes are driven by
    /// pressure alone (the classic pipe model: fronts at about half the right speed). Ignored
    /// in classic mode. Default on.
    pub momentum_advection: bool,
    /// Boundary of each edge, indexed by [`Edge`]. Default: walls.
    pub boundaries: [Boundary; 4],
    /// Courant number used to choose the step: `dt ≤ cfl · cell_size / (|u| + √(g·d))`,
    /// `0.01 ..= 1`. Default 0.5.
    pub cfl: f32,
    /// Longest single step, seconds, `0.0001 ..= 1` ([`LONGEST_STEP`]). Default 0.1.
    pub max_step: f32,
    /// Most steps one `advance` may take, `1 ..= 100000`. When a frame needs more, the
    /// simulation falls behind real time instead of becoming unstable. Default 256.
    pub max_substeps: u32,
    /// Kinematic viscosity of the fluid, m²/s, `0 ..= 10⁴`: 10⁻⁶ water ([`WATER_VISCOSITY`], the
    /// default), about 1 for mud, 10² ..= 10⁴ for lava. Each step every pipe's flow is slowed as
    /// a laminar film's, `flow · H²/(H² + 3·dt·ν)` with `H` its face depth
    /// ([`crate::pipes::film_drag`]); only in [`CrossSection::DepthDependent`] mode (classic
    /// pipes have no depth for it to act on).
    pub viscosity: f32,
    /// Rate at which still fluid (slower than [`crate::cooling::SOLIDIFY_SPEED`]) turns into
    /// ground, metres of depth per second, `0 ..= 1`; 0 (the default) is off. Cooling lava: the
    /// depth leaves the water, is counted in the ledger as solidified, and raises the terrain by
    /// the same quanta, on every backend (see `docs/MODEL.md`).
    pub solidify_rate: f32,
    /// Erosion and deposition of the ground by the water ([`ErosionParams`]). Default off.
    pub erosion: ErosionParams,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            gravity: 9.81,
            damping: 0.02,
            neighbours: NeighbourMode::Eight,
            cross_section: CrossSection::DepthDependent,
            pipe_depth: 1.0,
            momentum_advection: true,
            boundaries: [Boundary::Wall; 4],
            cfl: 0.5,
            max_step: 0.1,
            max_substeps: 256,
            viscosity: WATER_VISCOSITY,
            solidify_rate: 0.0,
            erosion: ErosionParams::default(),
        }
    }
}

impl Params {
    /// Checks every field against its documented range.
    pub fn validate(&self) -> Result<()> {
        GRAVITY_RANGE.check(self.gravity)?;
        DAMPING_RANGE.check(self.damping)?;
        PIPE_DEPTH_RANGE.check(self.pipe_depth)?;
        CFL_RANGE.check(self.cfl)?;
        MAX_STEP_RANGE.check(self.max_step)?;
        VISCOSITY_RANGE.check(self.viscosity)?;
        SOLIDIFY_RATE_RANGE.check(self.solidify_rate)?;
        self.erosion.validate()?;
        if self.erosion.enabled && self.neighbours == NeighbourMode::Triangular {
            // Erosion's slopes and capacity are written for the square grid's geometry.
            return Err(Error::invalid("neighbours", "triangular", "four or eight while erosion is enabled (erosion is written for the square grid)"));
        }
        let substeps = MAX_SUBSTEPS_RANGE;
        if !(substeps.min as u32..=substeps.max as u32).contains(&self.max_substeps) {
            return Err(Error::invalid(substeps.name, self.max_substeps, format!("{} ..= {}", substeps.min, substeps.max)));
        }
        for boundary in self.boundaries {
            match boundary {
                Boundary::Inflow { rate } => {
                    INFLOW_RATE_RANGE.check(rate)?;
                }
                Boundary::Level { level } => {
                    BOUNDARY_LEVEL_RANGE.check(level)?;
                }
                Boundary::Wall | Boundary::Open => {}
            }
        }
        Ok(())
    }

    /// Whether the step advects momentum: depth-dependent mode with [`Params::momentum_advection`].
    /// Not on the triangular lattice, whose advection is not yet written: there the step is
    /// pressure-driven, as with `momentum_advection` off.
    pub fn advects(&self) -> bool {
        self.momentum_advection && self.cross_section == CrossSection::DepthDependent && self.neighbours != NeighbourMode::Triangular
    }

    /// Flux kept after `dt` seconds of damping: `(1 − damping)^dt`.
    pub fn flux_decay(&self, dt: f32) -> f32 {
        (1.0 - self.damping as f64).max(0.0).powf(dt as f64) as f32
    }

    /// Widths of the orthogonal and diagonal pipes, in metres, for a cell of `cell_size`.
    ///
    /// The total conductance across any line must equal the continuum's, which requires
    /// `w_orth + √2·w_diag = cell_size`; the 4:1 coefficient ratio of the isotropic nine-point
    /// Laplacian then gives `w_orth = 2/3·dx`, `w_diag = √2/6·dx`.
    ///
    /// On the triangular lattice all six pipes are `dx` long and `dx/√3` wide, the face between
    /// two hexagonal cells: then the flux `g·d·w/dx·Δη` summed over the six neighbours is
    /// `g·d·(w/dx)·(3/2)·dx²·∇²η`, which over the cell's area `dx²·√3/2` is exactly the
    /// continuum's `g·d·∇²η` (both "orthogonal" and "diagonal" entries are this one width).
    pub fn pipe_widths(&self, cell_size: f32) -> [f32; 2] {
        match self.neighbours {
            NeighbourMode::Four => [cell_size, 0.0],
            NeighbourMode::Eight => [cell_size * 2.0 / 3.0, cell_size * std::f32::consts::SQRT_2 / 6.0],
            NeighbourMode::Triangular => [cell_size * TRIANGULAR_FACE_RATIO; 2],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets the parameter of `range` in default parameters to `value` (a level or a rate goes on
    /// every edge).
    fn with(range: &ParamRange, value: f32) -> Params {
        let mut p = Params::default();
        match range.name {
            "gravity" => p.gravity = value,
            "damping" => p.damping = value,
            "pipe_depth" => p.pipe_depth = value,
            "cfl" => p.cfl = value,
            "max_step" => p.max_step = value,
            "max_substeps" => p.max_substeps = value as u32,
            "inflow_rate" => p.boundaries = [Boundary::Inflow { rate: value }; 4],
            "boundary_level" => p.boundaries = [Boundary::Level { level: value }; 4],
            "viscosity" => p.viscosity = value,
            "solidify_rate" => p.solidify_rate = value,
            "erosion_capacity" => p.erosion.capacity = value,
            "erosion_dissolve_rate" => p.erosion.dissolve_rate = value,
            "erosion_deposit_rate" => p.erosion.deposit_rate = value,
            "erosion_min_tilt" => p.erosion.min_tilt = value,
            "erosion_talus_angle" => p.erosion.talus_angle = value,
            "erosion_thermal_rate" => p.erosion.thermal_rate = value,
            other => panic!("no field for the range of {other}"),
        }
        p
    }

    /// Every neighbour mode is found by its name (and its count of neighbours); any other name
    /// is refused with an error that names `neighbours` and the accepted values.
    #[test]
    fn neighbour_modes_are_found_by_name_and_unknown_names_refused() {
        for mode in NeighbourMode::ALL {
            println!("{mode:?}: {:?}", mode.name());
            assert_eq!(NeighbourMode::from_name(mode.name()).unwrap(), mode);
        }
        assert_eq!(NeighbourMode::from_name("6").unwrap(), NeighbourMode::Triangular);
        let refused = NeighbourMode::from_name("hexagonal-ish").unwrap_err().to_string();
        println!("unknown name: {refused}");
        assert!(refused.contains("neighbours") && refused.contains("four, eight or triangular"));
    }

    /// Erosion is written for the square grid: with it on, the triangular lattice is refused
    /// with an error naming `neighbours`; with it off, the lattice validates.
    #[test]
    fn erosion_is_refused_on_the_triangular_lattice() {
        let mut p = Params { neighbours: NeighbourMode::Triangular, ..Params::default() };
        assert!(p.validate().is_ok());
        p.erosion.enabled = true;
        let refused = p.validate().unwrap_err().to_string();
        println!("triangular with erosion: {refused}");
        assert!(refused.contains("neighbours"));
    }

    /// Every row of the range table is what `Params::validate` checks: both ends pass, a step
    /// beyond either end fails with an error that names the parameter and prints the range.
    #[test]
    fn validate_accepts_exactly_the_ranges_of_the_table() {
        for range in PARAM_RANGES {
            // Integers step by one; floats by a thousandth of the span.
            let beyond = if range.name == "max_substeps" { 1.0 } else { (range.max - range.min) * 1.0e-3 };
            let (low, high) = (with(&range, range.min).validate(), with(&range, range.max).validate());
            let below = with(&range, range.min - beyond).validate();
            let above = with(&range, range.max + beyond).validate();
            println!("{}: {} ..= {} {}: ends {low:?} {high:?}; below: {below:?}; above: {above:?}", range.name, range.min, range.max, range.unit);
            assert!(low.is_ok() && high.is_ok(), "{}: the ends are valid", range.name);
            for outside in [below, above] {
                // Below 1 substep is 0 as u32: still outside.
                let message = outside.expect_err("outside the range").to_string();
                assert!(message.contains(range.name) && message.contains(&format!("{} ..= {}", range.min, range.max)), "{message}");
            }
        }
    }
}
