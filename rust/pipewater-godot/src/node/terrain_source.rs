//! `terrain_source`: the ground read from a terrain the game already has — a Terrain3D, an
//! HTerrain, a `CollisionShape3D` holding a `HeightMapShape3D`, or other static geometry baked by
//! physics rays — in bulk, by method name (no build dependency on either addon), fitted to, and
//! followed live by the changed rectangle through the exact terrain-edit path
//! (`Simulation::move_terrain_region`: water kept, ledger exact). The arithmetic (placement,
//! resampling, holes, the rectangle an edit touches, fitting) is plain Rust in
//! [`pipewater_core::terrain_source`].

use super::PipeWater;
use crate::validate;
use godot::classes::image::Format;
use godot::classes::{CollisionShape3D, HeightMapShape3D, Image, Node, Node3D, PhysicsRayQueryParameters3D};
use godot::global::godot_warn;
use godot::prelude::*;
use pipewater_core::terrain_source::{changed_vertices, context_around, fit_grid, ground_of_cells, HeightWindow, HoleGround, SourcePlacement, VertexRect};
use pipewater_core::{CellRect, Grid, SourceId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// HTerrain's `HTerrainData.CHANNEL_HEIGHT`.
const HTERRAIN_CHANNEL_HEIGHT: i64 = 0;
/// HTerrain's `HTerrainData.CHANNEL_COLOR`: its Holes brush paints this map's alpha.
const HTERRAIN_CHANNEL_COLOR: i64 = 3;
/// HTerrain's shaders discard ground whose color-map alpha is below 0.5 (of 255 as RGBA8).
const HTERRAIN_HOLE_ALPHA_BELOW: u8 = 128;
/// Terrain3D's control map bit for a hole (bit 2 of the pixel's 32 bits).
const TERRAIN3D_HOLE_BIT: u32 = 1 << 2;
/// Half the height a bake's rays span, m, above and below the water node.
const BAKE_REACH: f32 = 100_000.0;

/// What `terrain_holes` chooses (`TERRAIN_HOLES_WALL`, `TERRAIN_HOLES_DRAIN`).
#[derive(GodotConvert, Var, Export, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[godot(via = i64)]
pub enum TerrainHoles {
    /// Ground the water cannot enter (the default).
    #[default]
    Wall = 0,
    /// The hole's rim drains what reaches it.
    Drain = 1,
}

impl From<TerrainHoles> for HoleGround {
    fn from(h: TerrainHoles) -> HoleGround {
        match h {
            TerrainHoles::Wall => HoleGround::Wall,
            TerrainHoles::Drain => HoleGround::Drain,
        }
    }
}

/// A change the source reported, waiting for the next frame or query.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Edited {
    Vertices(VertexRect),
    /// A source that says only that it changed (a shape's `changed`): compared with its last copy.
    Whole,
}

/// How a resolved source is read (by `PipeWater` and `PipeWaterWorld` alike).
pub(crate) enum Kind {
    /// Terrain3D: regions of `region_size` vertices, `vertex_spacing` m apart, at the world origin.
    Terrain3D { data: Gd<Object>, region_size: i64, spacing: f64 },
    /// HTerrain: one map of `resolution` vertices a side under `get_internal_transform()`.
    HTerrain { node: Gd<Node3D>, data: Gd<Object> },
    /// A `CollisionShape3D` with a `HeightMapShape3D`, centred on the shape node.
    Shape { node: Gd<Node3D>, shape: Gd<HeightMapShape3D> },
    /// Anything with collision: heights by rays, one per water cell, on `bake_terrain()`.
    Baked { node: Gd<Node3D> },
}

/// The node's link to its `terrain_source`: the resolved source, the edits it reported, the last
/// copy of data that only says "changed", and the drains placed for holes.
#[derive(Default)]
pub struct TerrainLink {
    /// The path the link was resolved for; a different `terrain_source` resolves again.
    path: Option<NodePath>,
    kind: Option<Kind>,
    edited: Rc<RefCell<Vec<Edited>>>,
    /// The signal connected, to disconnect when the source changes.
    connection: Option<(Gd<Object>, StringName, Callable)>,
    /// A shape's map data or a bake's heights (global Y per cell, NaN for a miss) as last read.
    copy: Vec<f32>,
    copy_width: usize,
    /// Drains for hole cells, by cell.
    drains: HashMap<(u32, u32), SourceId>,
    /// Drains a whole read asked for, placed once the simulation exists.
    drains_wanted: Option<Vec<(u32, u32)>>,
    /// Reads so far (whole and by rectangle), and the cells the last one changed.
    reads: u64,
    last_rect: Rect2i,
    /// `terrain_holes` as of the last whole read: a change reads the source again.
    holes_read: Option<TerrainHoles>,
}

fn has_methods(object: &Gd<Object>, what: &str, methods: &[&str]) -> Result<(), String> {
    match methods.iter().find(|m| !object.has_method(**m)) {
        Some(m) => Err(format!("terrain_source: {what} has no method {m}() (expected {what} as its class documentation describes it)")),
        None => Ok(()),
    }
}

fn object_of(v: Variant, what: &str) -> Result<Gd<Object>, String> {
    v.try_to::<Gd<Object>>().map_err(|_| format!("terrain_source: {what} is null or not an object"))
}

impl Kind {
    /// What `node` is, or an error naming what was expected.
    pub(crate) fn resolve(node: Gd<Node>) -> Result<Kind, String> {
        let name = format!("{} ({})", node.get_name(), node.get_class());
        let object: Gd<Object> = node.clone().upcast();
        let node3d = node.clone().try_cast::<Node3D>().map_err(|_| format!("terrain_source: {name} is not a Node3D; valid are a Terrain3D, an HTerrain, a CollisionShape3D holding a HeightMapShape3D, or a Node3D with collision to bake"))?;
        if object.has_method("get_region_size") || object.get_property_list().iter_shared().any(|p| p.get("name").is_some_and(|n| n.to_string() == "region_size")) {
            let data = object_of(object.get("data"), "Terrain3D.data")?;
            has_methods(&data, "Terrain3DData", &["get_regions_active", "get_region_map"])?;
            let region_size = object.get("region_size").try_to::<i64>().map_err(|_| "terrain_source: Terrain3D.region_size is not an int".to_string())?;
            let spacing = object.get("vertex_spacing").try_to::<f64>().map_err(|_| "terrain_source: Terrain3D.vertex_spacing is not a float".to_string())?;
            if !(1..=4096).contains(&region_size) || !(spacing.is_finite() && spacing > 0.0) {
                return Err(format!("terrain_source: Terrain3D region_size = {region_size}, vertex_spacing = {spacing}: valid are 1 ..= 4096 and a positive spacing"));
            }
            return Ok(Kind::Terrain3D { data, region_size, spacing });
        }
        if object.has_method("get_internal_transform") && object.has_method("get_data") {
            let data = object_of(node3d.clone().upcast::<Object>().call("get_data", &[]), "HTerrain.get_data()")?;
            has_methods(&data, "HTerrainData", &["get_resolution", "get_all_heights", "get_heights_region"])?;
            return Ok(Kind::HTerrain { node: node3d, data });
        }
        if let Ok(shape_node) = node.clone().try_cast::<CollisionShape3D>() {
            if let Some(shape) = shape_node.get_shape().and_then(|s| s.try_cast::<HeightMapShape3D>().ok()) {
                return Ok(Kind::Shape { node: node3d, shape });
            }
        }
        if has_collision(&node) {
            return Ok(Kind::Baked { node: node3d });
        }
        Err(format!("terrain_source: {name} is none of: a Terrain3D (with `data`, `region_size`, `vertex_spacing`), an HTerrain (`get_data()`, `get_internal_transform()`), a CollisionShape3D holding a HeightMapShape3D, or a node with collision (a CollisionObject3D or a CSG shape with use_collision, itself or below it) to bake_terrain() from"))
    }

    /// The transform from the source's vertex `(u, h, v)` to a global point, for `water` (whose
    /// cells a bake samples).
    pub(crate) fn vertex_transform(&self, water: &Transform3D, grid: &Grid) -> Transform3D {
        match self {
            Kind::Terrain3D { spacing, .. } => Transform3D::new(Basis::from_scale(Vector3::new(*spacing as f32, 1.0, *spacing as f32)), Vector3::ZERO),
            Kind::HTerrain { node, .. } => node.clone().upcast::<Object>().call("get_internal_transform", &[]).try_to::<Transform3D>().unwrap_or(Transform3D::IDENTITY),
            Kind::Shape { node, shape } => {
                let half = Vector3::new((shape.get_map_width() - 1) as f32 / 2.0, 0.0, (shape.get_map_depth() - 1) as f32 / 2.0);
                node.get_global_transform() * Transform3D::new(Basis::IDENTITY, -half)
            }
            Kind::Baked { .. } => {
                // Vertex (u, v) is the centre of cell (u, v); heights are global Y.
                let dx = grid.cell_size;
                let corner = Vector3::new(-(grid.width as f32) * dx / 2.0 + dx / 2.0, 0.0, -(grid.height as f32) * dx / 2.0 + dx / 2.0);
                let flat = |v: Vector3| Vector3::new(v.x, 0.0, v.z);
                let origin = flat(*water * corner);
                Transform3D::new(Basis::from_cols(flat(water.basis * Vector3::new(dx, 0.0, 0.0)), Vector3::UP, flat(water.basis * Vector3::new(0.0, 0.0, dx))), origin)
            }
        }
    }

    /// Every vertex the source holds.
    pub(crate) fn bounds(&self, grid: &Grid) -> Result<VertexRect, String> {
        match self {
            Kind::Terrain3D { data, region_size, .. } => {
                let regions = regions(data)?;
                let mut rect: Option<VertexRect> = None;
                for (location, _) in &regions {
                    let r = VertexRect { u0: location.x as i64 * region_size, v0: location.y as i64 * region_size, u1: (location.x as i64 + 1) * region_size - 1, v1: (location.y as i64 + 1) * region_size - 1 };
                    rect = Some(rect.map_or(r, |a| VertexRect { u0: a.u0.min(r.u0), v0: a.v0.min(r.v0), u1: a.u1.max(r.u1), v1: a.v1.max(r.v1) }));
                }
                rect.ok_or_else(|| "terrain_source: the Terrain3D has no active region".to_string())
            }
            Kind::HTerrain { data, .. } => {
                let res = data.clone().call("get_resolution", &[]).try_to::<i64>().unwrap_or(0);
                if res < 2 {
                    return Err(format!("terrain_source: HTerrainData.get_resolution() = {res}: valid is 2 or more"));
                }
                Ok(VertexRect { u0: 0, v0: 0, u1: res - 1, v1: res - 1 })
            }
            Kind::Shape { shape, .. } => Ok(VertexRect { u0: 0, v0: 0, u1: shape.get_map_width() as i64 - 1, v1: shape.get_map_depth() as i64 - 1 }),
            Kind::Baked { .. } => Ok(VertexRect { u0: 0, v0: 0, u1: grid.width as i64 - 1, v1: grid.height as i64 - 1 }),
        }
    }
}

impl Kind {
    /// Whether every object the source is read through still exists (a freed source is never
    /// called).
    pub(crate) fn alive(&self) -> bool {
        match self {
            Kind::Terrain3D { data, .. } => data.is_instance_valid(),
            Kind::HTerrain { node, data } => node.is_instance_valid() && data.is_instance_valid(),
            Kind::Shape { node, shape } => node.is_instance_valid() && shape.is_instance_valid(),
            Kind::Baked { node } => node.is_instance_valid(),
        }
    }

    /// Where the cells of `grid`, centred on a node at `water` (global), fall on the source.
    pub(crate) fn placement(&self, water: &Transform3D, grid: &Grid) -> Result<SourcePlacement, String> {
        let to_local = water.affine_inverse() * self.vertex_transform(water, grid);
        let b = to_local.basis;
        let col = |v: Vector3| [v.x as f64, v.y as f64, v.z as f64];
        SourcePlacement::from_local_affine(grid, col(to_local.origin), col(b.col_a()), col(b.col_b()), col(b.col_c())).map_err(|e| format!("terrain_source: {e}"))
    }

    /// A Terrain3D's active regions (location, region), to hand to [`Kind::read`] while they
    /// do not change (listing them costs a call a region); `None` for other sources.
    pub(crate) fn terrain3d_regions(&self) -> Option<Result<Regions, String>> {
        match self {
            Kind::Terrain3D { data, .. } => Some(regions(data)),
            _ => None,
        }
    }

    /// Heights of the vertices of `rect` (NaN where the source has no ground: holes, gaps,
    /// outside it, and values that are not finite), and how many of its values were not finite
    /// outside its holes (bad data, read as holes). A Terrain3D's regions are listed again unless
    /// `listed` gives them ([`Kind::terrain3d_regions`]). A baked source has no map: nothing is
    /// read.
    pub(crate) fn read(&self, rect: VertexRect, listed: Option<&[(Vector2i, Gd<Object>)]>) -> Result<(HeightWindow, usize), String> {
        let mut window = HeightWindow::empty(rect);
        let mut not_finite = 0;
        let mut count = |values: &[f32]| not_finite += values.iter().filter(|v| !v.is_finite()).count();
        match self {
            Kind::Terrain3D { data, region_size, .. } => {
                let rs = *region_size;
                let fresh;
                let listed = match listed {
                    Some(listed) => listed,
                    None => {
                        fresh = regions(data)?;
                        &fresh
                    }
                };
                for (location, region) in listed {
                    let whole = VertexRect { u0: location.x as i64 * rs, v0: location.y as i64 * rs, u1: (location.x as i64 + 1) * rs - 1, v1: (location.y as i64 + 1) * rs - 1 };
                    let Some(part) = whole.intersect(&rect) else { continue };
                    let height = region.get("height_map").try_to::<Gd<Image>>().map_err(|_| "terrain_source: a Terrain3DRegion has no height_map Image".to_string())?;
                    if height.get_width() as i64 != rs || height.get_height() as i64 != rs {
                        return Err(format!("terrain_source: a Terrain3DRegion's height_map is {}×{}, not region_size {rs}", height.get_width(), height.get_height()));
                    }
                    let crop = Rect2i::new(Vector2i::new((part.u0 - whole.u0) as i32, (part.v0 - whole.v0) as i32), Vector2i::new((part.u1 - part.u0 + 1) as i32, (part.v1 - part.v0 + 1) as i32));
                    let mut values: Vec<f32> = rf_words(&height, crop)?.into_iter().map(f32::from_bits).collect();
                    let mut holes = vec![false; values.len()];
                    if let Ok(control) = region.get("control_map").try_to::<Gd<Image>>() {
                        if control.get_width() as i64 == rs && control.get_height() as i64 == rs {
                            for ((value, hole), bits) in values.iter_mut().zip(holes.iter_mut()).zip(rf_words(&control, crop)?) {
                                if bits & TERRAIN3D_HOLE_BIT != 0 {
                                    *value = f32::NAN;
                                    *hole = true;
                                }
                            }
                        }
                    }
                    not_finite += values.iter().zip(&holes).filter(|(v, hole)| !v.is_finite() && !**hole).count();
                    window.paste(part, &values);
                }
            }
            Kind::HTerrain { data, .. } => {
                let res = data.clone().call("get_resolution", &[]).try_to::<i64>().unwrap_or(0);
                let all = VertexRect { u0: 0, v0: 0, u1: res - 1, v1: res - 1 };
                let Some(part) = rect.intersect(&all) else { return Ok((window, 0)) };
                let heights = if part == all {
                    data.clone().call("get_all_heights", &[])
                } else {
                    let args = [part.u0, part.v0, part.u1 - part.u0 + 1, part.v1 - part.v0 + 1].map(|a| a.to_variant());
                    data.clone().call("get_heights_region", &args)
                };
                let heights = heights.try_to::<PackedFloat32Array>().map_err(|_| "terrain_source: HTerrainData heights are not a PackedFloat32Array".to_string())?;
                if heights.len() != part.count() {
                    return Err(format!("terrain_source: HTerrainData gave {} heights for a {}-vertex region", heights.len(), part.count()));
                }
                let mut values = heights.to_vec();
                count(&values);
                if let Some(color) = hterrain_color_map(data, res) {
                    let crop = Rect2i::new(Vector2i::new(part.u0 as i32, part.v0 as i32), Vector2i::new((part.u1 - part.u0 + 1) as i32, (part.v1 - part.v0 + 1) as i32));
                    let mut color = color.get_region(crop).ok_or("terrain_source: HTerrain's color map could not be cropped")?;
                    if color.get_format() != Format::RGBA8 {
                        color.convert(Format::RGBA8);
                    }
                    for (value, pixel) in values.iter_mut().zip(color.get_data().as_slice().chunks_exact(4)) {
                        if pixel[3] < HTERRAIN_HOLE_ALPHA_BELOW {
                            *value = f32::NAN;
                        }
                    }
                }
                window.paste(part, &values);
            }
            Kind::Shape { shape, .. } => {
                let data = shape.get_map_data();
                let width = shape.get_map_width().max(0) as usize;
                let all = VertexRect { u0: 0, v0: 0, u1: width as i64 - 1, v1: shape.get_map_depth() as i64 - 1 };
                if data.len() != all.count() {
                    return Err(format!("terrain_source: the HeightMapShape3D holds {} values for {}×{}", data.len(), width, shape.get_map_depth()));
                }
                let Some(part) = rect.intersect(&all) else { return Ok((window, 0)) };
                let rows: Vec<f32> = (part.v0..=part.v1).flat_map(|v| data.as_slice()[(v as usize * width + part.u0 as usize)..=(v as usize * width + part.u1 as usize)].to_vec()).collect();
                count(&rows);
                window.paste(part, &rows);
            }
            Kind::Baked { .. } => {}
        }
        Ok((window, not_finite))
    }

    /// Connects `edited` to the signal by which the source reports its changes (Terrain3D's
    /// `maps_edited`, HTerrain's `region_changed` of the height and color channels, a shape's
    /// `changed`), linked to `owner`: the connection, to disconnect later; `None` for a bake, or
    /// (warned) a source without the signal.
    pub(crate) fn connect_edits(&self, owner: &Gd<Object>, edited: Rc<RefCell<Vec<Edited>>>, class: &str) -> Option<(Gd<Object>, StringName, Callable)> {
        let (object, signal, callable): (Gd<Object>, &str, Callable) = match self {
            Kind::Terrain3D { data, spacing, .. } => {
                let spacing = *spacing;
                let callable = Callable::from_linked_fn("pipewater_terrain3d_edited", owner, move |args: &[&Variant]| {
                    if let Some(aabb) = args.first().and_then(|a| a.try_to::<Aabb>().ok()) {
                        let (lo, hi) = (aabb.position, aabb.position + aabb.size);
                        let s = spacing as f32;
                        edited.borrow_mut().push(Edited::Vertices(VertexRect { u0: (lo.x / s).floor() as i64, v0: (lo.z / s).floor() as i64, u1: (hi.x / s).ceil() as i64, v1: (hi.z / s).ceil() as i64 }));
                    }
                });
                (data.clone(), "maps_edited", callable)
            }
            Kind::HTerrain { data, .. } => {
                let callable = Callable::from_linked_fn("pipewater_hterrain_edited", owner, move |args: &[&Variant]| {
                    let rect = args.first().and_then(|a| a.try_to::<Rect2i>().ok());
                    let channel = args.get(1).and_then(|a| a.try_to::<i64>().ok());
                    // The color channel carries the holes (its alpha).
                    if let (Some(r), Some(HTERRAIN_CHANNEL_HEIGHT | HTERRAIN_CHANNEL_COLOR)) = (rect, channel) {
                        let (p, s) = (r.position, r.size);
                        edited.borrow_mut().push(Edited::Vertices(VertexRect { u0: p.x as i64, v0: p.y as i64, u1: (p.x + s.x) as i64 - 1, v1: (p.y + s.y) as i64 - 1 }));
                    }
                });
                (data.clone(), "region_changed", callable)
            }
            Kind::Shape { shape, .. } => {
                let callable = Callable::from_linked_fn("pipewater_shape_changed", owner, move |_: &[&Variant]| edited.borrow_mut().push(Edited::Whole));
                (shape.clone().upcast(), "changed", callable)
            }
            Kind::Baked { .. } => return None,
        };
        let mut target = object.clone();
        if !target.has_signal(signal) {
            godot_warn!("{class}: terrain_source: the source has no signal {signal}; its edits are not followed (call bake_terrain() after changing it)");
            return None;
        }
        if !target.is_connected(signal, &callable) {
            target.connect(signal, &callable);
        }
        Some((object, StringName::from(signal), callable))
    }
}

/// Disconnects what [`Kind::connect_edits`] connected.
pub(crate) fn disconnect_edits(connection: &mut Option<(Gd<Object>, StringName, Callable)>) {
    if let Some((mut object, signal, callable)) = connection.take() {
        if object.is_instance_valid() && object.is_connected(&signal, &callable) {
            object.disconnect(&signal, &callable);
        }
    }
}

/// Whether `node` or a node below it has collision a ray can hit.
fn has_collision(node: &Gd<Node>) -> bool {
    let collides = node.is_class("CollisionObject3D") || (node.is_class("CSGShape3D") && node.get("use_collision").try_to::<bool>().unwrap_or(false));
    collides || node.get_children().iter_shared().any(|c| has_collision(&c))
}

/// A Terrain3D's active regions: location and region object.
pub(crate) type Regions = Vec<(Vector2i, Gd<Object>)>;

/// Terrain3D's active regions: location and region object.
fn regions(data: &Gd<Object>) -> Result<Regions, String> {
    let list = data.clone().call("get_regions_active", &[]);
    // The real Terrain3D returns a typed Array[Terrain3DRegion], which a VarArray refuses.
    let list = list.try_to::<godot::builtin::AnyArray>().map_err(|_| "terrain_source: Terrain3DData.get_regions_active() did not return an Array".to_string())?;
    let mut out = Vec::new();
    for region in list.iter_shared() {
        let region = object_of(region, "a Terrain3DRegion")?;
        let location = region.get("location").try_to::<Vector2i>().map_err(|_| "terrain_source: Terrain3DRegion.location is not a Vector2i".to_string())?;
        out.push((location, region));
    }
    Ok(out)
}

/// HTerrain's first color map when it has one of `resolution`² pixels (its alpha holds the holes).
fn hterrain_color_map(data: &Gd<Object>, resolution: i64) -> Option<Gd<Image>> {
    let mut data = data.clone();
    if !data.has_method("get_map_count") || data.call("get_map_count", &[HTERRAIN_CHANNEL_COLOR.to_variant()]).try_to::<i64>().unwrap_or(0) < 1 {
        return None;
    }
    let image = data.call("get_image", &[HTERRAIN_CHANNEL_COLOR.to_variant()]).try_to::<Gd<Image>>().ok()?;
    (image.get_width() as i64 == resolution && image.get_height() as i64 == resolution).then_some(image)
}

/// The 32-bit words of `image`'s pixels in `rect` (`FORMAT_RF`: a float or, for a control map,
/// its bits).
fn rf_words(image: &Gd<Image>, rect: Rect2i) -> Result<Vec<u32>, String> {
    let mut part = image.get_region(rect).ok_or("terrain_source: a map could not be cropped")?;
    if part.get_format() != Format::RF {
        part.convert(Format::RF);
    }
    let bytes = part.get_data();
    Ok(bytes.as_slice().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

impl TerrainLink {
    /// Heights of the vertices of `rect` (NaN where the source has no ground).
    fn read(&mut self, rect: VertexRect, grid: &Grid) -> Result<HeightWindow, String> {
        let Some(kind) = &self.kind else { return Ok(HeightWindow::empty(rect)) };
        if !matches!(kind, Kind::Baked { .. }) {
            return kind.read(rect, None).map(|(window, _)| window);
        }
        let mut window = HeightWindow::empty(rect);
        if self.copy.len() != grid.cell_count() || self.copy_width != grid.width as usize {
            return Err("terrain_source: nothing baked for this grid yet: call bake_terrain()".into());
        }
        let all = VertexRect { u0: 0, v0: 0, u1: grid.width as i64 - 1, v1: grid.height as i64 - 1 };
        let Some(part) = rect.intersect(&all) else { return Ok(window) };
        let w = grid.width as usize;
        let rows: Vec<f32> = (part.v0..=part.v1).flat_map(|v| self.copy[(v as usize * w + part.u0 as usize)..=(v as usize * w + part.u1 as usize)].to_vec()).collect();
        window.paste(part, &rows);
        Ok(window)
    }

    fn disconnect(&mut self) {
        disconnect_edits(&mut self.connection);
    }
}

#[godot_api(secondary)]
impl PipeWater {
    /// `terrain_holes`: ground the water cannot enter (the default).
    #[constant]
    const TERRAIN_HOLES_WALL: i64 = TerrainHoles::Wall as i64;
    /// `terrain_holes`: hole cells next to ground drain what reaches them.
    #[constant]
    const TERRAIN_HOLES_DRAIN: i64 = TerrainHoles::Drain as i64;

    /// Sets `terrain_heights` from an image: its red channel (or luminance) × `height_scale` +
    /// `height_offset` (m), resampled (bilinear) to `grid_size`. Works where textures keep no
    /// image (headless servers). Returns false, keeping the terrain, when the image is empty,
    /// cannot be decompressed, or gives heights outside ±1e6 m.
    #[func]
    fn set_terrain_from_image(&mut self, image: Option<Gd<Image>>, height_scale: f64, height_offset: f64) -> bool {
        let heights = super::build::terrain_from_image(image, self.grid_size, self.cell_size, height_scale, height_offset, &mut self.errors);
        let Some(heights) = heights else { return false };
        self.terrain_heights = PackedFloat32Array::from(heights.as_slice());
        self.pending.terrain();
        true
    }

    /// Sets the node's `grid_size`, `cell_size` and placement from `terrain_source`: one cell per
    /// `vertices_per_cell` vertices of the source (`1 ..= 64`; 1 puts a cell centre on every
    /// vertex), centred on the source's vertices and turned as they are; the node keeps its
    /// global height. Refused, changing nothing, when there is no source, it cannot be read, its
    /// vertices are not square, or the grid would pass 4096 cells a side (the error names the
    /// smallest `vertices_per_cell` that fits). A baked source has no extent of its own: it
    /// fits nothing. The simulation is rebuilt from the source's ground.
    #[func]
    fn fit_to_terrain_source(&mut self, vertices_per_cell: i64) -> bool {
        let Some(k) = self.errors.accept(validate::int_in("fit_to_terrain_source: vertices_per_cell", vertices_per_cell, 1, 64)) else { return false };
        if !self.resolve_terrain_source() {
            return false;
        }
        let grid = self.current_grid();
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else {
            self.errors.reject("fit_to_terrain_source: terrain_source is empty".into());
            return false;
        };
        if matches!(kind, Kind::Baked { .. }) {
            self.errors.reject("fit_to_terrain_source: a baked terrain_source has no grid of its own to fit (valid: a Terrain3D, an HTerrain or a HeightMapShape3D)".into());
            return false;
        }
        let to_global = kind.vertex_transform(&water, &grid);
        let bounds = kind.bounds(&grid);
        let Some(bounds) = self.errors.accept(bounds) else { return false };
        let fitted = fit_grid(bounds, k as u32, validate::MAX_NODE_GRID_SIDE as u32).map_err(|e| format!("fit_to_terrain_source: {e}"));
        let Some(fitted) = self.errors.accept(fitted) else { return false };
        let (a, c) = (to_global.basis.col_a(), to_global.basis.col_c());
        let (su, sv) = (Vector3::new(a.x, 0.0, a.z).length(), Vector3::new(c.x, 0.0, c.z).length());
        if (su - sv).abs() > 1.0e-4 * su.max(sv) || su <= 0.0 {
            self.errors.reject(format!("fit_to_terrain_source: the source's vertices are {su} m by {sv} m apart: valid are square spacings (cells are square)"));
            return false;
        }
        let centre = to_global * Vector3::new(fitted.centre[0] as f32, 0.0, fitted.centre[1] as f32);
        let yaw = a.z.atan2(a.x);
        let height = water.origin.y;
        let placed = Transform3D::new(Basis::from_axis_angle(Vector3::UP, -yaw), Vector3::new(centre.x, height, centre.z));
        let size = Vector2i::new(fitted.cells[0] as i32, fitted.cells[1] as i32);
        let cell = su as f64 * k as f64;
        if self.errors.accept(validate::grid_size(size.x as i64, size.y as i64)).is_none() || self.errors.accept(validate::cell_size(cell)).is_none() {
            return false;
        }
        self.base_mut().set_global_transform(placed);
        self.grid_size = size;
        self.cell_size = cell;
        self.pending.rebuild();
        self.ensure_sim()
    }

    /// Reads the ground of every cell from `terrain_source` again, water kept (after moving the
    /// water node or the source, or changing it in ways it does not signal). For a source of
    /// static geometry, casts one ray down through the centre of every cell (from 100 km above
    /// the node to 100 km below; other bodies in the way are looked past) and keeps the first
    /// hit on the source or a node below it; cells where no ray hits it are holes
    /// (`terrain_holes`); only the rectangle of cells whose ground changed since the last bake
    /// is edited, as for a `HeightMapShape3D`. Terrain3D and HTerrain are read whole at the next
    /// frame or query. False when there is no source or it cannot be read.
    #[func]
    fn bake_terrain(&mut self) -> bool {
        if !self.resolve_terrain_source() || !self.ensure_sim() {
            return false;
        }
        if matches!(self.terrain_link.kind, Some(Kind::Baked { .. })) {
            let grid = self.current_grid();
            let Some(baked) = self.bake_rays(&grid) else { return false };
            let before = std::mem::replace(&mut self.terrain_link.copy, baked);
            self.terrain_link.copy_width = grid.width as usize;
            if let Some(rect) = changed_vertices(&before, &self.terrain_link.copy, grid.width as usize) {
                self.terrain_link.edited.borrow_mut().push(Edited::Vertices(rect));
            }
        } else {
            self.terrain_link.edited.borrow_mut().push(Edited::Whole);
            if !matches!(self.terrain_link.kind, Some(Kind::Shape { .. })) {
                self.pending.terrain();
            }
        }
        self.take_terrain_source_edits();
        self.show_edit();
        self.errors.last().is_empty() || self.sim.is_some()
    }

    /// How many times the ground was read from `terrain_source` (whole reads and changed
    /// rectangles both), and the cells the last read covered: a Dictionary `{reads, last_rect}`
    /// (`Rect2i` of cells). Edits the source reported are applied first. For tests and tools
    /// that check that an edit reached the water.
    #[func]
    fn get_terrain_source_stats(&mut self) -> VarDictionary {
        self.ensure_sim();
        let mut d = VarDictionary::new();
        d.set("reads", self.terrain_link.reads as i64);
        d.set("last_rect", self.terrain_link.last_rect);
        d
    }
}

impl PipeWater {
    /// `set_terrain_source`'s work: the ground is read from the new source at the next frame or
    /// query.
    pub(super) fn store_terrain_source(&mut self, value: NodePath) {
        self.terrain_source = value;
        self.terrain_link.disconnect();
        self.terrain_link.path = None;
        self.terrain_link.kind = None;
        self.pending.terrain();
    }

    fn current_grid(&self) -> Grid {
        self.sim.as_ref().map(|s| s.grid()).or_else(|| super::build::grid(self.grid_size, self.cell_size).ok()).unwrap_or(Grid { width: 2, height: 2, cell_size: 1.0 })
    }

    /// Resolves `terrain_source` when it changed and connects to its edits. False (reported)
    /// when it is set but cannot be used; true when it is empty or usable.
    fn resolve_terrain_source(&mut self) -> bool {
        if self.terrain_source.is_empty() {
            return true;
        }
        if self.neighbour_mode == super::WaterNeighbours::Triangular {
            // Sources are read, written back and drained at the square grid's cell centres: on the
            // lattice their ground would be stretched 2/√3 along Z. Said once per source.
            if self.terrain_link.path.as_ref() != Some(&self.terrain_source) || self.terrain_link.kind.is_some() {
                self.errors.reject(format!("terrain_source: {} is not read with neighbour_mode = NEIGHBOURS_TRIANGULAR: valid are NEIGHBOURS_FOUR or NEIGHBOURS_EIGHT (terrain sources are read at the square grid's cell centres); the ground comes from terrain_heights or heightmap", self.terrain_source));
                self.terrain_link.disconnect();
                self.terrain_link.path = Some(self.terrain_source.clone());
                self.terrain_link.kind = None;
            }
            return false;
        }
        if self.terrain_link.path.as_ref() == Some(&self.terrain_source) && self.terrain_link.kind.is_some() {
            return true;
        }
        if !self.base().is_inside_tree() {
            return false;
        }
        let Some(node) = self.base().get_node_or_null(&self.terrain_source) else {
            self.errors.reject(format!("terrain_source: no node at {} (valid: a path to a Terrain3D, an HTerrain, a CollisionShape3D or static geometry)", self.terrain_source));
            self.terrain_link.path = Some(self.terrain_source.clone());
            return false;
        };
        let kind = Kind::resolve(node);
        self.terrain_link.path = Some(self.terrain_source.clone());
        let Some(kind) = self.errors.accept(kind) else { return false };
        self.terrain_link.disconnect();
        let owner = self.to_gd().upcast::<Object>();
        self.terrain_link.connection = kind.connect_edits(&owner, self.terrain_link.edited.clone(), "PipeWater");
        self.terrain_link.kind = Some(kind);
        true
    }

    /// The ground of every cell of `grid` from `terrain_source` (holes resolved), for a build or
    /// a terrain update; `None` when there is none or it cannot be read (reported), and the
    /// properties' terrain is used.
    pub(super) fn terrain_from_source(&mut self, grid: Grid) -> Option<Vec<f32>> {
        if self.terrain_source.is_empty() || !self.resolve_terrain_source() {
            return None;
        }
        if matches!(self.terrain_link.kind, Some(Kind::Baked { .. })) && self.terrain_link.copy.len() != grid.cell_count() {
            let baked = self.bake_rays(&grid)?;
            self.terrain_link.copy = baked;
            self.terrain_link.copy_width = grid.width as usize;
        }
        let whole = grid.whole();
        let heights = self.source_cells(&grid, whole, whole);
        let Some((heights, drains)) = self.errors.accept(heights) else { return None };
        if let Some(Kind::Shape { shape, .. }) = &self.terrain_link.kind {
            self.terrain_link.copy = shape.get_map_data().to_vec();
            self.terrain_link.copy_width = shape.get_map_width().max(1) as usize;
        }
        self.terrain_link.edited.borrow_mut().clear();
        self.terrain_link.drains_wanted = Some(drains);
        self.terrain_link.holes_read = Some(self.terrain_holes);
        self.terrain_link.reads += 1;
        self.terrain_link.last_rect = Rect2i::new(Vector2i::ZERO, Vector2i::new(grid.width as i32, grid.height as i32));
        self.terrain_heights = PackedFloat32Array::from(heights.as_slice());
        Some(heights)
    }

    /// Ground for the cells of `rect` (holes resolved with their neighbours in `context`, a rect
    /// holding it), and the drain cells among them.
    fn source_cells(&mut self, grid: &Grid, context: CellRect, rect: CellRect) -> Result<(Vec<f32>, Vec<(u32, u32)>), String> {
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return Err("terrain_source: not resolved".into()) };
        let placement = kind.placement(&water, grid)?;
        let window = self.terrain_link.read(placement.vertices_for(context), grid)?;
        let (heights, drains, _) = ground_of_cells(&placement, &window, context, rect, self.terrain_holes.into());
        Ok((heights, drains))
    }

    /// A new simulation holds none of the old one's drains: those of the whole read are placed.
    pub(super) fn terrain_source_built(&mut self) {
        self.terrain_link.drains.clear();
        self.take_terrain_source_edits();
    }

    /// Applies the edits the source reported since the last frame or query: each changed
    /// rectangle's cells are read again and set through the exact terrain-edit path (water
    /// kept, ledger exact); a shape that only says it changed is compared with its last copy.
    /// Places the drains a whole read asked for.
    pub(super) fn take_terrain_source_edits(&mut self) {
        if self.terrain_link.holes_read != Some(self.terrain_holes) && !self.terrain_source.is_empty() && self.terrain_link.holes_read.is_some() {
            self.terrain_link.holes_read = None;
            self.pending.terrain();
        }
        let Some(grid) = self.sim.as_ref().map(|s| s.grid()) else { return };
        if let Some(drains) = self.terrain_link.drains_wanted.take() {
            let old: Vec<(u32, u32)> = self.terrain_link.drains.keys().copied().collect();
            self.replace_drains(&grid, &old, drains);
        }
        let edits: Vec<Edited> = self.terrain_link.edited.borrow_mut().drain(..).collect();
        if edits.is_empty() || self.terrain_source.is_empty() {
            return;
        }
        let mut changed: Option<VertexRect> = None;
        for edit in edits {
            let rect = match edit {
                Edited::Vertices(r) => Some(r),
                Edited::Whole => match &self.terrain_link.kind {
                    Some(Kind::Shape { shape, .. }) => {
                        let now = shape.get_map_data().to_vec();
                        let width = shape.get_map_width().max(1) as usize;
                        let rect = if width == self.terrain_link.copy_width { changed_vertices(&self.terrain_link.copy, &now, width) } else { Some(VertexRect { u0: 0, v0: 0, u1: width as i64 - 1, v1: (now.len() / width) as i64 - 1 }) };
                        self.terrain_link.copy = now;
                        self.terrain_link.copy_width = width;
                        rect
                    }
                    _ => None,
                },
            };
            if let Some(r) = rect {
                changed = Some(changed.map_or(r, |a| VertexRect { u0: a.u0.min(r.u0), v0: a.v0.min(r.v0), u1: a.u1.max(r.u1), v1: a.v1.max(r.v1) }));
            }
        }
        let Some(changed) = changed else { return };
        self.apply_source_rect(&grid, changed);
    }

    fn apply_source_rect(&mut self, grid: &Grid, changed: VertexRect) {
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return };
        let Ok(placement) = kind.placement(&water, grid) else { return };
        let Some(cells) = placement.cells_touched(grid, changed) else { return };
        // One more cell around, so that a drain at the rect's edge sees the ground beyond it.
        let context = context_around(cells, grid.width, grid.height);
        let read = self.source_cells(grid, context, cells);
        let Some((heights, drains)) = self.errors.accept(read) else { return };
        // The ground the source gave last is known here, so the change reaches the water as
        // edits of the rectangle (its cost, not the grid's); without it, exact values through
        // a read of the whole state.
        let whole = self.terrain_heights.len() == grid.cell_count();
        let result = match self.sim.as_mut() {
            Some(sim) if whole => Some(sim.move_terrain_region(cells, &pipewater_core::authoring::crop(grid, self.terrain_heights.as_slice(), cells), &heights)),
            Some(sim) => Some(sim.set_terrain_region(cells, &heights)),
            None => None,
        };
        if self.errors.core_result("terrain_source", result).is_none() {
            return;
        }
        if whole {
            // In place: a copy of a 4096² grid's heights costs more than the dab.
            pipewater_core::authoring::paste(grid, self.terrain_heights.as_mut_slice(), cells, &heights);
        }
        let old: Vec<(u32, u32)> = self.terrain_link.drains.keys().copied().filter(|&(x, y)| x >= cells.x && y >= cells.y && x < cells.x + cells.width && y < cells.y + cells.height).collect();
        self.replace_drains(grid, &old, drains);
        self.terrain_link.reads += 1;
        self.terrain_link.last_rect = Rect2i::new(Vector2i::new(cells.x as i32, cells.y as i32), Vector2i::new(cells.width as i32, cells.height as i32));
        self.outputs.forget_shown();
    }

    /// Removes the drains of `old` cells and places one on each of `new`: a one-cell drain that
    /// takes up to the most a cell holds each second.
    fn replace_drains(&mut self, grid: &Grid, old: &[(u32, u32)], new: Vec<(u32, u32)>) {
        let Some(sim) = self.sim.as_mut() else { return };
        for cell in old {
            if let Some(id) = self.terrain_link.drains.remove(cell) {
                sim.remove_source(id);
            }
        }
        let dx = grid.cell_size;
        let rate = (pipewater_core::MAX_DEPTH * dx * dx * 0.5).min(pipewater_core::sources::MAX_SOURCE_RATE);
        for (x, y) in new {
            let (lx, lz) = ((x as f32 + 0.5) * dx - grid.width as f32 * dx / 2.0, (y as f32 + 0.5) * dx - grid.height as f32 * dx / 2.0);
            match sim.add_source(lx, lz, -rate, 0.0) {
                Ok(id) => {
                    self.terrain_link.drains.insert((x, y), id);
                }
                Err(e) => {
                    self.errors.reject(format!("terrain_source: a drain for the hole at cell ({x}, {y}) was refused: {e}"));
                    return;
                }
            }
        }
    }

    /// With `terrain_write_back`, gives the ground of the cells of the local footprint of an edit
    /// at `(x, z)` within `radius` back to `terrain_source` (Terrain3D: `set_height` on each vertex
    /// and `update_maps` of the regions touched; HTerrain: the height image and
    /// `notify_region_change`; a `HeightMapShape3D`: its `map_data`), so that the game digs one
    /// ground. Each source vertex under the footprint takes the water's ground bilinear between
    /// the cell centres around it; vertices near the footprint's edge (whose cells reach past it)
    /// and walls (holes) are left alone. Reads the whole state, as the editor's brushes do.
    pub(super) fn write_back_terrain(&mut self, x: f32, z: f32, radius: f32) {
        if !self.terrain_write_back || self.terrain_source.is_empty() || !self.resolve_terrain_source() {
            return;
        }
        let Some(grid) = self.sim.as_ref().map(|s| s.grid()) else { return };
        let Some(rect) = grid.footprint_rect(x, z, radius) else { return };
        if matches!(self.terrain_link.kind, Some(Kind::Baked { .. }) | None) {
            return;
        }
        let water = self.base().get_global_transform();
        let Some(kind) = &self.terrain_link.kind else { return };
        let Ok(placement) = kind.placement(&water, &grid) else { return };
        let Ok(bounds) = kind.bounds(&grid) else { return };
        let Some(vertices) = placement.vertices_for(rect).intersect(&bounds) else { return };
        let result = self.sim.as_mut().map(|s| s.terrain_region(rect));
        let Some(cells) = self.errors.core_result("terrain_write_back", result) else { return };
        // The source will give this ground back (its change signal): the ground it gave last is
        // now the water's own, so the re-read moves the cells by what the sampling changes only.
        if self.terrain_heights.len() == grid.cell_count() {
            pipewater_core::authoring::paste(&grid, self.terrain_heights.as_mut_slice(), rect, &cells);
        }
        let mut written: Vec<(i64, i64, f32)> = Vec::new();
        for v in vertices.v0..=vertices.v1 {
            for u in vertices.u0..=vertices.u1 {
                let Some(local) = placement.ground_at_vertex(&cells, rect, u, v) else { continue };
                written.push((u, v, ((local as f64 - placement.height_offset) / placement.height_scale) as f32));
            }
        }
        if written.is_empty() {
            return;
        }
        let (u0, v0) = (written.iter().map(|w| w.0).min().unwrap_or(0), written.iter().map(|w| w.1).min().unwrap_or(0));
        let (u1, v1) = (written.iter().map(|w| w.0).max().unwrap_or(0), written.iter().map(|w| w.1).max().unwrap_or(0));
        match kind {
            Kind::Terrain3D { data, spacing, .. } => {
                let mut data = data.clone();
                let mut regions: Vec<Gd<Object>> = Vec::new();
                for &(u, v, h) in &written {
                    let at = Vector3::new((u as f64 * spacing) as f32, 0.0, (v as f64 * spacing) as f32);
                    data.call("set_height", &[at.to_variant(), h.to_variant()]);
                    if let Ok(region) = data.call("get_regionp", &[at.to_variant()]).try_to::<Gd<Object>>() {
                        if !regions.contains(&region) {
                            regions.push(region);
                        }
                    }
                }
                for region in regions.iter_mut() {
                    region.set("edited", &true.to_variant());
                }
                data.call("update_maps", &[0.to_variant(), false.to_variant(), false.to_variant()]);
                for region in regions.iter_mut() {
                    region.set("edited", &false.to_variant());
                }
            }
            Kind::HTerrain { data, .. } => {
                let mut data = data.clone();
                let Ok(mut image) = data.call("get_image", &[HTERRAIN_CHANNEL_HEIGHT.to_variant()]).try_to::<Gd<Image>>() else {
                    self.errors.reject("terrain_write_back: HTerrainData.get_image(CHANNEL_HEIGHT) gave no Image".into());
                    return;
                };
                for &(u, v, h) in &written {
                    image.set_pixel(u as i32, v as i32, Color::from_rgb(h, 0.0, 0.0));
                }
                let changed = Rect2i::new(Vector2i::new(u0 as i32, v0 as i32), Vector2i::new((u1 - u0 + 1) as i32, (v1 - v0 + 1) as i32));
                data.call("notify_region_change", &[changed.to_variant(), HTERRAIN_CHANNEL_HEIGHT.to_variant()]);
            }
            Kind::Shape { shape, .. } => {
                let mut shape = shape.clone();
                let width = shape.get_map_width() as i64;
                let mut map = shape.get_map_data().to_vec();
                for &(u, v, h) in &written {
                    map[(v * width + u) as usize] = h;
                }
                shape.set_map_data(&PackedFloat32Array::from(map.as_slice()));
            }
            Kind::Baked { .. } => {}
        }
    }

    /// Global Y of the source under every cell centre of `grid` by rays (NaN where none hits it).
    fn bake_rays(&mut self, grid: &Grid) -> Option<Vec<f32>> {
        let Some(Kind::Baked { node }) = &self.terrain_link.kind else { return None };
        let node = node.clone();
        let water = self.base().get_global_transform();
        let Some(world) = self.base().get_world_3d() else {
            self.errors.reject("bake_terrain: the water node is in no 3D world".into());
            return None;
        };
        let Some(mut space) = world.get_direct_space_state() else {
            self.errors.reject("bake_terrain: the physics space cannot be queried now (valid: outside a physics step)".into());
            return None;
        };
        let dx = grid.cell_size;
        let mut out = Vec::with_capacity(grid.cell_count());
        for y in 0..grid.height {
            for x in 0..grid.width {
                let local = Vector3::new((x as f32 + 0.5) * dx - grid.width as f32 * dx / 2.0, 0.0, (y as f32 + 0.5) * dx - grid.height as f32 * dx / 2.0);
                let centre = water * local;
                let mut from = centre + Vector3::UP * BAKE_REACH;
                let to = centre - Vector3::UP * BAKE_REACH;
                let mut height = f32::NAN;
                // Other things (water bodies, boats) may lie above the ground: look past them.
                for _ in 0..8 {
                    let Some(query) = PhysicsRayQueryParameters3D::create(from, to) else { break };
                    let hit = space.intersect_ray(&query);
                    let Some(position) = hit.get("position").and_then(|p| p.try_to::<Vector3>().ok()) else { break };
                    let collider = hit.get("collider").and_then(|c| c.try_to::<Gd<Node>>().ok());
                    if collider.is_some_and(|c| c == node.clone().upcast::<Node>() || node.is_ancestor_of(&c)) {
                        height = position.y;
                        break;
                    }
                    from = position - Vector3::UP * 1.0e-3;
                }
                out.push(height);
            }
        }
        Some(out)
    }
}
