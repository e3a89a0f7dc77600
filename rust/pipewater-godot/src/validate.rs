//! Argument validation for the node's properties and methods.
//!
//! Every check returns the value in the simulation's types or a message that names the property
//! or argument and its valid range; the node forwards the message with `godot_error!` and keeps
//! its previous, valid state.

use pipewater_core::grid::{CELL_SIZE_RANGE, MIN_GRID_SIDE};
use pipewater_core::quanta::MAX_DEPTH;
use pipewater_core::{CellRect, Grid};
use pipewater_core::params::{ParamRange, INFLOW_RATE_RANGE};
use pipewater_core::simulation::{MAX_EDIT_VOLUME, MAX_FRAME_DELTA, MAX_INITIAL_SPEED, MAX_TERRAIN_DELTA};
use pipewater_core::sources::MAX_SOURCE_RATE;
use pipewater_core::quanta::MAX_TERRAIN_ABS;

/// Largest grid side the node accepts, cells. Larger grids need more than 256 MiB per output
/// texture and a mesh no renderer draws at interactive rates.
pub const MAX_NODE_GRID_SIDE: i64 = 4096;
/// Largest time scale.
pub const MAX_TIME_SCALE: f64 = 100.0;
/// Largest radius of a `PipeWaterSource`, m (the simulation also keeps it within twice the
/// grid's larger side).
pub const MAX_SOURCE_RADIUS: f64 = 1.0e4;
/// Valid height scale of a heightmap, m per unit of pixel value.
pub const HEIGHT_SCALE_RANGE: (f64, f64) = (-1.0e5, 1.0e5);

/// Checks that `value` is finite and in `min ..= max`, and returns it as `f32`.
pub fn float_in(name: &str, value: f64, min: f64, max: f64, unit: &str) -> Result<f32, String> {
    // Compared as the f32 the simulation keeps: a limit that comes from an f32 constant (such as
    // cell_size's 0.001, which widens to 0.0010000000475) must accept the value it prints as.
    let narrowed = value as f32;
    if value.is_finite() && narrowed >= min as f32 && narrowed <= max as f32 {
        Ok(narrowed)
    } else {
        // Limits print as f32 so that 0.001 reads 0.001, not its f64 widening.
        Err(format!("{name} = {value} is out of range: valid range is {} ..= {}{unit}", min as f32, max as f32))
    }
}

/// Checks property `property` against the core's range for its parameter (`range`, a row of
/// [`pipewater_core::params::PARAM_RANGES`]), and returns it as `f32`.
pub fn param(property: &str, range: &ParamRange, value: f64) -> Result<f32, String> {
    let unit = if range.unit.is_empty() { String::new() } else { format!(" {}", range.unit) };
    float_in(property, value, range.min as f64, range.max as f64, &unit)
}

/// Checks integer property `property` against the core's range for its parameter.
pub fn int_param(property: &str, range: &ParamRange, value: i64) -> Result<i64, String> {
    int_in(property, value, range.min as i64, range.max as i64)
}

/// Checks that an integer is in `min ..= max`.
pub fn int_in(name: &str, value: i64, min: i64, max: i64) -> Result<i64, String> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{name} = {value} is out of range: valid range is {min} ..= {max}"))
    }
}

/// Grid size `(x, y)` in cells: each side `2 ..= 4096`.
pub fn grid_size(x: i64, y: i64) -> Result<(u32, u32), String> {
    let lo = MIN_GRID_SIDE as i64;
    let x = int_in("grid_size.x", x, lo, MAX_NODE_GRID_SIDE)?;
    let y = int_in("grid_size.y", y, lo, MAX_NODE_GRID_SIDE)?;
    Ok((x as u32, y as u32))
}

/// Cell size, m.
pub fn cell_size(value: f64) -> Result<f32, String> {
    float_in("cell_size", value, CELL_SIZE_RANGE.0 as f64, CELL_SIZE_RANGE.1 as f64, " m")
}

/// A level or height in local metres (initial water level, height offset).
pub fn local_height(name: &str, value: f64) -> Result<f32, String> {
    let m = MAX_TERRAIN_ABS as f64;
    float_in(name, value, -m, m, " m")
}

/// Time scale of the node.
pub fn time_scale(value: f64) -> Result<f32, String> {
    float_in("time_scale", value, 0.0, MAX_TIME_SCALE, "")
}

/// Inflow rate of one edge, m³/s.
pub fn inflow_rate(name: &str, value: f64) -> Result<f32, String> {
    param(name, &INFLOW_RATE_RANGE, value)
}

/// One velocity of an initial current, m/s along local X and Z: each component within ±1000.
pub fn initial_velocity(name: &str, v: [f32; 2]) -> Result<[f32; 2], String> {
    let m = MAX_INITIAL_SPEED as f64;
    let x = float_in(&format!("{name}.x"), v[0] as f64, -m, m, " m/s")?;
    let z = float_in(&format!("{name}.y"), v[1] as f64, -m, m, " m/s")?;
    Ok([x, z])
}

/// Initial velocities, one per cell (`width × height`, row-major), each component within ±1000
/// m/s.
pub fn initial_velocities(values: &[[f32; 2]], width: u32, height: u32) -> Result<(), String> {
    let expected = width as usize * height as usize;
    if values.len() != expected {
        return Err(format!(
            "set_initial_velocity: velocities has {} values: valid is exactly grid_size.x × grid_size.y = {expected}",
            values.len()
        ));
    }
    for (i, v) in values.iter().enumerate() {
        initial_velocity(&format!("set_initial_velocity: velocities[{i}]"), *v)?;
    }
    Ok(())
}

/// A rectangle in local XZ metres: position and size finite.
pub fn local_region(method: &str, position: [f32; 2], size: [f32; 2]) -> Result<(), String> {
    if position.iter().chain(&size).all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(format!("{method}: region = {position:?} + {size:?} is not finite: valid is any finite rectangle (local XZ, m)"))
    }
}

/// Checks a global position: all three components finite.
pub fn position(method: &str, x: f32, y: f32, z: f32) -> Result<(), String> {
    if x.is_finite() && y.is_finite() && z.is_finite() {
        Ok(())
    } else {
        Err(format!("{method}: global_position = ({x}, {y}, {z}) is not finite: valid range is any finite point"))
    }
}

/// Radius of an edit, m: `0 ..= 2 × the larger grid extent` (0 means the one cell under the point).
pub fn radius(method: &str, value: f64, extent: [f32; 2]) -> Result<f32, String> {
    let max = 2.0 * extent[0].max(extent[1]) as f64;
    float_in(&format!("{method}: radius"), value, 0.0, max, " m (twice the grid's larger side)")
}

/// Volume of an edit, m³.
pub fn volume(method: &str, value: f64) -> Result<f32, String> {
    float_in(&format!("{method}: volume"), value, 0.0, MAX_EDIT_VOLUME as f64, " m³")
}

/// Rate of a source (positive) or drain (negative), m³/s.
pub fn source_rate(method: &str, value: f64) -> Result<f32, String> {
    let m = MAX_SOURCE_RATE as f64;
    float_in(&format!("{method}: rate"), value, -m, m, " m³/s")
}

/// Terrain change of one edit, m.
pub fn delta_height(value: f64) -> Result<f32, String> {
    let m = MAX_TERRAIN_DELTA as f64;
    float_in("modify_terrain: delta_height", value, -m, m, " m")
}

/// Radius of a `PipeWaterSource`, m: `0 ..= 10000` (0: the one cell under it).
pub fn source_radius(value: f64) -> Result<f32, String> {
    float_in("radius", value, 0.0, MAX_SOURCE_RADIUS, " m")
}

/// Depth a water brush adds (positive) or removes (negative) at its centre, m.
pub fn brush_depth(method: &str, value: f64) -> Result<f32, String> {
    let m = MAX_DEPTH as f64;
    float_in(&format!("{method}: depth"), value, -m, m, " m")
}

/// Share of the way to the neighbourhood's mean a smoothing brush moves the ground, `0 ..= 1`.
pub fn smooth_strength(value: f64) -> Result<f32, String> {
    float_in("smooth_terrain: strength", value, 0.0, 1.0, "")
}

/// A region of cells (`Rect2i` position and size) that lies inside `grid` and holds at least one
/// cell.
pub fn cell_region(method: &str, position: [i64; 2], size: [i64; 2], grid: Grid) -> Result<CellRect, String> {
    let (w, h) = (grid.width as i64, grid.height as i64);
    let fits = |start: i64, len: i64, side: i64| start >= 0 && len >= 1 && start < side && len <= side - start;
    if fits(position[0], size[0], w) && fits(position[1], size[1], h) {
        return Ok(CellRect { x: position[0] as u32, y: position[1] as u32, width: size[0] as u32, height: size[1] as u32 });
    }
    Err(format!(
        "{method}: region = position ({}, {}), size ({}, {}) is out of range: valid regions hold at least one cell and lie inside the grid's {w} × {h} cells (x 0 ..= {}, y 0 ..= {})",
        position[0],
        position[1],
        size[0],
        size[1],
        w - 1,
        h - 1
    ))
}

/// Values for a region: exactly its number of cells.
pub fn region_values(method: &str, name: &str, len: usize, rect: CellRect) -> Result<(), String> {
    if len == rect.cell_count() {
        Ok(())
    } else {
        Err(format!("{method}: {name} has {len} values: valid is exactly region.size.x × region.size.y = {} × {} = {}", rect.width, rect.height, rect.cell_count()))
    }
}

/// A saved state's grid against the node's (`grid_size`, `cell_size`), for `initial_state`.
pub fn saved_grid(saved: Grid, node: Grid) -> Result<(), String> {
    if saved == node {
        return Ok(());
    }
    Err(format!(
        "the state was saved for a {} × {} grid of {} m cells; this node has grid_size ({}, {}) and cell_size {} m: valid states have the node's grid (set grid_size and cell_size first)",
        saved.width, saved.height, saved.cell_size, node.width, node.height, node.cell_size
    ))
}

/// Frame length of a manual step, s.
pub fn step_delta(value: f64) -> Result<f32, String> {
    float_in("step: delta", value, 0.0, MAX_FRAME_DELTA as f64, " s")
}

/// A terrain array: exactly `width × height` finite heights within the core's limits.
pub fn terrain_heights(heights: &[f32], width: u32, height: u32) -> Result<(), String> {
    let expected = width as usize * height as usize;
    if heights.len() != expected {
        return Err(format!(
            "terrain_heights has {} elements: it needs exactly grid_size.x × grid_size.y = {width} × {height} = {expected}",
            heights.len()
        ));
    }
    let m = MAX_TERRAIN_ABS;
    if let Some((i, v)) = heights.iter().enumerate().find(|(_, v)| !v.is_finite() || v.abs() > m) {
        return Err(format!("terrain_heights[{i}] = {v} is out of range: valid range is -{m} ..= {m} m"));
    }
    Ok(())
}

/// The frame time a physics frame asks of the simulation: `delta × time_scale`, capped at the
/// longest frame the simulation accepts (a hitch of several seconds is then simulated as
/// [`MAX_FRAME_DELTA`] rather than rejected). Non-finite or negative input gives 0.
pub fn scaled_frame_delta(delta: f64, time_scale: f32) -> f32 {
    let scaled = delta * time_scale as f64;
    if scaled.is_finite() && scaled > 0.0 {
        scaled.min(MAX_FRAME_DELTA as f64) as f32
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pipewater_core::params::{CFL_RANGE, GRAVITY_RANGE, MAX_STEP_RANGE, MAX_SUBSTEPS_RANGE, PIPE_DEPTH_RANGE};

    /// Each bad value and the words its message must contain: the name and the range.
    fn assert_rejected<T: std::fmt::Debug>(result: Result<T, String>, name: &str, range: &str) {
        println!("{result:?}");
        let message = result.expect_err("a bad value must be rejected");
        assert!(message.contains(name), "message names `{name}`: {message}");
        assert!(message.contains(range), "message gives the range `{range}`: {message}");
    }

    #[test]
    fn grid_sizes_outside_2_to_4096_are_rejected_with_the_axis_named() {
        assert_eq!(grid_size(2, 4096), Ok((2, 4096)));
        assert_rejected(grid_size(0, 64), "grid_size.x", "2 ..= 4096");
        assert_rejected(grid_size(-5, 64), "grid_size.x", "2 ..= 4096");
        assert_rejected(grid_size(64, 1), "grid_size.y", "2 ..= 4096");
        assert_rejected(grid_size(64, 100_000), "grid_size.y", "2 ..= 4096");
    }

    #[test]
    fn cell_size_rejects_zero_negative_nan_and_infinity() {
        assert_eq!(cell_size(0.5), Ok(0.5));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1.0e9] {
            assert_rejected(cell_size(bad), "cell_size", "0.001 ..= 10000 m");
        }
    }

    #[test]
    fn the_documented_ends_of_each_range_are_accepted() {
        let ends = [
            ("cell_size", cell_size(0.001), cell_size(10000.0)),
            ("pipe_depth", param("pipe_depth", &PIPE_DEPTH_RANGE, 0.001), param("pipe_depth", &PIPE_DEPTH_RANGE, 1000.0)),
            ("max_step", param("max_step", &MAX_STEP_RANGE, 0.0001), param("max_step", &MAX_STEP_RANGE, 1.0)),
            ("courant", param("courant", &CFL_RANGE, 0.01), param("courant", &CFL_RANGE, 1.0)),
        ];
        for (name, low, high) in ends {
            println!("{name}: lowest {low:?}, highest {high:?}");
            assert!(low.is_ok() && high.is_ok(), "{name}");
        }
        assert_rejected(cell_size(0.0009), "cell_size", "0.001 ..= 10000");
        assert_rejected(cell_size(10001.0), "cell_size", "0.001 ..= 10000");
    }

    #[test]
    fn edit_arguments_reject_nan_negative_and_huge_values() {
        let extent = [64.0, 32.0];
        assert_eq!(radius("add_water", 3.0, extent), Ok(3.0));
        assert_rejected(radius("add_water", 1.0e6, extent), "add_water: radius", "0 ..= 128");
        assert_rejected(radius("add_water", -1.0, extent), "radius", "0 ..= 128");
        assert_rejected(volume("add_water", f64::NAN), "add_water: volume", "0 ..= 1000000000");
        assert_rejected(volume("remove_water", -2.0), "remove_water: volume", "0 ..= ");
        assert_rejected(source_rate("add_source", f64::INFINITY), "add_source: rate", "-1000000 ..= 1000000");
        assert_rejected(delta_height(f64::NAN), "delta_height", "-10000 ..= 10000");
        assert_rejected(step_delta(11.0), "step: delta", "0 ..= 10");
        assert_rejected(position("get_height", f32::NAN, 0.0, 0.0), "global_position", "finite");
    }

    #[test]
    fn parameters_reject_values_outside_their_documented_ranges() {
        assert_rejected(time_scale(-1.0), "time_scale", "0 ..= 100");
        assert_rejected(inflow_rate("inflow_rate_north", -3.0), "inflow_rate_north", "0 ..= 1000000");
        assert_rejected(local_height("initial_water_level", f64::NAN), "initial_water_level", "1000000 m");
        assert_rejected(param("gravity", &GRAVITY_RANGE, 1.0e3), "gravity", "0 ..= 100 m/s²");
        assert_rejected(int_param("max_substeps", &MAX_SUBSTEPS_RANGE, 0), "max_substeps", "1 ..= 100000");
    }

    #[test]
    fn terrain_arrays_of_the_wrong_length_or_with_nan_are_rejected() {
        assert_eq!(terrain_heights(&[0.0; 6], 3, 2), Ok(()));
        assert_rejected(terrain_heights(&[0.0; 5], 3, 2), "terrain_heights has 5 elements", "3 × 2 = 6");
        assert_rejected(terrain_heights(&[0.0, 1.0, f32::NAN, 0.0, 0.0, 0.0], 3, 2), "terrain_heights[2]", "1000000 m");
        assert_rejected(terrain_heights(&[0.0, 1.0e7, 0.0, 0.0, 0.0, 0.0], 3, 2), "terrain_heights[1]", "1000000 m");
    }

    #[test]
    fn authoring_arguments_reject_nan_negative_radii_and_regions_off_the_grid() {
        assert_eq!(source_radius(0.0), Ok(0.0));
        assert_rejected(source_radius(-1.0), "radius", "0 ..= 10000 m");
        assert_rejected(source_radius(f64::NAN), "radius", "0 ..= 10000 m");
        assert_rejected(brush_depth("paint_water", f64::INFINITY), "paint_water: depth", "-2048 ..= 2048 m");
        assert_rejected(smooth_strength(1.5), "smooth_terrain: strength", "0 ..= 1");
        let grid = Grid::new(64, 32, 1.0).unwrap();
        assert_eq!(cell_region("get_water_region", [0, 0], [64, 32], grid), Ok(grid.whole()));
        assert_eq!(cell_region("get_water_region", [63, 31], [1, 1], grid), Ok(CellRect { x: 63, y: 31, width: 1, height: 1 }));
        for (position, size) in [([-1, 0], [2, 2]), ([60, 0], [5, 1]), ([0, 0], [0, 4]), ([0, 32], [1, 1])] {
            assert_rejected(cell_region("get_water_region", position, size, grid), "get_water_region: region", "x 0 ..= 63, y 0 ..= 31");
        }
        assert_rejected(region_values("set_water_region", "depths", 5, CellRect { x: 0, y: 0, width: 2, height: 3 }), "depths has 5 values", "2 × 3 = 6");
    }

    #[test]
    fn a_state_of_another_grid_is_refused_with_both_grids_named() {
        let node = Grid::new(128, 128, 1.0).unwrap();
        assert_eq!(saved_grid(node, node), Ok(()));
        assert_rejected(saved_grid(Grid::new(64, 32, 1.0).unwrap(), node), "64 × 32 grid of 1 m cells", "grid_size (128, 128)");
        assert_rejected(saved_grid(Grid::new(128, 128, 0.5).unwrap(), node), "0.5 m cells", "cell_size 1 m");
    }

    #[test]
    fn physics_frame_delta_is_scaled_capped_and_never_nan() {
        let cases = [(0.016, 2.0, 0.032f32), (5.0, 4.0, 10.0), (f64::NAN, 1.0, 0.0), (-1.0, 1.0, 0.0), (0.016, 0.0, 0.0)];
        for (delta, scale, expected) in cases {
            let got = scaled_frame_delta(delta, scale);
            println!("delta {delta} × time_scale {scale} -> {got}, expected {expected}");
            assert!((got - expected).abs() < 1.0e-6);
        }
    }
}
