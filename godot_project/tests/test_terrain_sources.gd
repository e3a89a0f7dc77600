extends "res://tests/test_base.gd"
## Headless tests of [member PipeWater.terrain_source]: the ground read from a Terrain3D, an
## HTerrain, a HeightMapShape3D and static geometry (by rays), fitted to them, and followed live
## by the changed rectangle. Terrain3D and HTerrain are stand-ins (res://tests/stand_ins/) with
## the method names, signals and data layout of their class documentation; the addons
## themselves are not needed. Checks that feed bad sources expect Godot errors starting with
## "PipeWater:".
## [codeblock]
## $GODOT --headless --path godot_project -s res://tests/test_terrain_sources.gd
## [/codeblock]

const Terrain3DStandIn := preload("res://tests/stand_ins/terrain3d_stand_in.gd")
const HTerrainStandIn := preload("res://tests/stand_ins/hterrain_stand_in.gd")
const HTerrainDataStandIn := preload("res://tests/stand_ins/hterrain_data_stand_in.gd")
## Ground of a cell agrees with the source within this (m): the sums are f32.
const SAME_HEIGHT := 1.0e-4
## Height of a wall cell, local m (pipewater_core::terrain_source::WALL_HEIGHT).
const WALL := 1.0e6


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater terrain source tests, Godot %s" % Engine.get_version_info().string)
	await _test_terrain3d_regions_holes_and_edits()
	await _test_terrain3d_holes_as_drains()
	await _test_hterrain_moved_and_scaled()
	await _test_height_map_shape_and_its_changes()
	await _test_static_geometry_baked_by_rays()
	await _test_writing_back()
	await _test_bad_sources_are_refused()
	_finish()


func _cell(water: PipeWater, x: int, y: int) -> float:
	var values: PackedFloat32Array = water.get_terrain_region(Rect2i(x, y, 1, 1))
	return values[0] if values.size() == 1 else NAN


func _new_water() -> PipeWater:
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.show_mesh = false
	water.detail_waves = false
	water.paused = true
	water.initial_water_level = -10.0
	return water


## Two regions of 16² vertices, 2 m apart, at locations (0, 0) and (2, 0) (a gap between them),
## a bump on vertex (5, 7) and a hole on vertex (40, 3): fitted one cell a vertex, the bump is
## under cell (5, 7) alone, the gap and the hole are walls; an edit reaches the water as its
## rectangle only, with the water and the ledger kept.
func _test_terrain3d_regions_holes_and_edits() -> void:
	print("-- Terrain3D: regions, a gap, a hole, a bump, an edit")
	var terrain: Node3D = Terrain3DStandIn.new(16, 2.0)
	terrain.data.add_flat_region(Vector2i(0, 0), 1.0)
	terrain.data.add_flat_region(Vector2i(2, 0), 1.0)
	terrain.data.set_height(Vector3(10.0, 0.0, 14.0), 5.0)
	terrain.data.set_control_hole(Vector3(80.0, 0.0, 6.0), true)
	root.add_child(terrain)
	var water := _new_water()
	root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	var fitted: bool = water.fit_to_terrain_source(1)
	print("   fitted %s: grid %s, cell %.3f m, at %s" % [fitted, water.grid_size, water.cell_size,
			water.global_position])
	_check(fitted and water.grid_size == Vector2i(48, 16) and water.cell_size == 2.0,
			"fit gives one 2 m cell a vertex over the regions' 48 × 16 vertices")
	# Cell centres on vertices: cell (0, 0) at vertex (0, 0) = global (0, 0).
	_near(water.global_position.x, 47.0, 1e-4, "the grid's centre x lies between vertices 23, 24")
	_near(_cell(water, 5, 7), 5.0, SAME_HEIGHT, "the bump on vertex (5, 7) is under cell (5, 7)")
	var around := [_cell(water, 4, 7), _cell(water, 6, 7), _cell(water, 5, 6), _cell(water, 5, 8)]
	print("   the cells around it: %s" % [around])
	_check(around.all(func(h: float) -> bool: return absf(h - 1.0) < SAME_HEIGHT),
			"the four cells around the bump keep the flat ground")
	_near(_cell(water, 20, 5), WALL, 1.0, "a cell in the gap between regions is a wall")
	_near(_cell(water, 40, 3), WALL, 1.0, "the hole's cell (40, 3) is a wall")
	_near(_cell(water, 41, 3), 1.0, SAME_HEIGHT, "the hole's neighbour keeps its ground")

	var start: Dictionary = water.get_terrain_source_stats()
	water.add_water(water.to_global(Vector3(-30.0, 0.0, 0.0)), 50.0, 6.0)
	water.step(1.0 / 60.0)
	var total_before: float = water.get_total_water()
	var far_before := _cell(water, 30, 10)
	terrain.data.set_height(Vector3(6.0, 0.0, 6.0), 4.0)
	terrain.data.maps_edited.emit(AABB(Vector3(6.0, -100.0, 6.0), Vector3(0.0, 200.0, 0.0)))
	var after := _cell(water, 3, 3)
	var stats: Dictionary = water.get_terrain_source_stats()
	var rect: Rect2i = stats["last_rect"]
	var ledger: Dictionary = water.get_water_ledger()
	print("   edit of vertex (3, 3): cell %.4f m, rect %s, reads %d -> %d, water %.6f -> %.6f" % [
			after, rect, start["reads"], stats["reads"], total_before, water.get_total_water()])
	_near(after, 4.0, SAME_HEIGHT, "the edited vertex reaches cell (3, 3)")
	_check(stats["reads"] == start["reads"] + 1 and rect.has_point(Vector2i(3, 3))
			and rect.get_area() <= 16, "only the edited rectangle was read again (≤ 4 × 4 cells)")
	_check(_cell(water, 30, 10) == far_before, "cells outside it are untouched")
	_near(water.get_total_water(), total_before, 1e-6, "the water is kept through the edit")
	_near(ledger["total"], ledger["expected"], 1e-6, "the ledger balances after the edit")
	water.free()
	terrain.free()


## As drains, the gap's cells next to ground keep its height and take a drain each; water poured
## beside the gap leaves through them, and the ledger counts it as removed.
func _test_terrain3d_holes_as_drains() -> void:
	print("-- Terrain3D: holes as drains")
	var terrain: Node3D = Terrain3DStandIn.new(16, 1.0)
	terrain.data.add_flat_region(Vector2i(0, 0), 0.0)
	terrain.data.add_flat_region(Vector2i(2, 0), 0.0)
	root.add_child(terrain)
	var water := _new_water()
	water.terrain_holes = PipeWater.TERRAIN_HOLES_DRAIN
	root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	water.fit_to_terrain_source(1)
	var drains: int = water.get_source_ids().size()
	print("   %d drains on the gap's rim; rim cell %.3f m, inner cell %.1f m" % [drains,
			_cell(water, 16, 4), _cell(water, 24, 4)])
	_check(drains == 32, "the gap's two rims of 16 cells take a drain each")
	_near(_cell(water, 16, 4), 0.0, SAME_HEIGHT, "a rim cell keeps the ground beside it")
	_near(_cell(water, 24, 4), WALL, 1.0, "a cell inside the gap is a wall")
	var poured: float = water.add_water(water.to_global(Vector3(-10.5, 0.0, 0.0)), 20.0, 3.0)
	water.paused = false
	for i in 240:
		water.step(1.0 / 60.0)
	var ledger: Dictionary = water.get_water_ledger()
	print("   poured %.3f m³; after 4 s: %.3f m³ left, %.3f m³ removed" % [poured,
			water.get_total_water(), ledger["removed"]])
	_check(ledger["removed"] > 0.5, "water that reached the gap was drained")
	_near(ledger["total"], ledger["expected"], 1e-6, "the ledger balances with the drains")
	water.terrain_holes = PipeWater.TERRAIN_HOLES_WALL
	var walls_now := _cell(water, 16, 4)
	print("   back to walls: rim cell %.1f m, %d sources" % [walls_now, water.get_source_ids().size()])
	_check(walls_now > WALL - 1.0 and water.get_source_ids().is_empty(),
			"terrain_holes = WALL reads the source again: the rim is a wall and its drains are gone")
	water.free()
	terrain.free()


## An HTerrain moved, its map scaled (2 m a pixel, heights × 3): a bump on pixel (4, 9) lands
## under cell (4, 9) of the fitted grid at the height the transform gives; moving the node and
## reading again moves the bump; region_changed of the height channel reads the rectangle only.
func _test_hterrain_moved_and_scaled() -> void:
	print("-- HTerrain: moved, scaled, region_changed")
	var data: Resource = HTerrainDataStandIn.new(33, 0.5)
	data.get_image(0).set_pixel(4, 9, Color(2.0, 0, 0))
	var terrain: Node3D = HTerrainStandIn.new(data)
	terrain.map_scale = Vector3(2.0, 3.0, 2.0)
	terrain.position = Vector3(10.0, -2.0, 5.0)
	root.add_child(terrain)
	var water := _new_water()
	root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	var fitted: bool = water.fit_to_terrain_source(1)
	print("   fitted %s: grid %s, cell %.3f m; bump cell %.4f, global %.4f" % [fitted,
			water.grid_size, water.cell_size, _cell(water, 4, 9),
			water.get_terrain_height(Vector3(18.0, 0.0, 23.0))])
	_check(fitted and water.grid_size == Vector2i(33, 33) and water.cell_size == 2.0,
			"fit gives 33 × 33 cells of 2 m")
	_near(water.get_terrain_height(Vector3(18.0, 0.0, 23.0)), -2.0 + 3.0 * 2.0, SAME_HEIGHT,
			"the bump stands at global (18, 23) at -2 + 3 × 2 m")
	_near(_cell(water, 4, 9), 4.0 - water.global_position.y, SAME_HEIGHT,
			"and under cell (4, 9)")
	terrain.position.x += 4.0
	water.bake_terrain()
	print("   moved by 4 m: cell (4, 9) %.4f, cell (6, 9) %.4f" % [_cell(water, 4, 9),
			_cell(water, 6, 9)])
	_near(_cell(water, 6, 9), 4.0, SAME_HEIGHT,
			"after moving the HTerrain 4 m the bump is under cell (6, 9)")
	_near(_cell(water, 4, 9), -2.0 + 1.5, SAME_HEIGHT, "and cell (4, 9) is flat ground again")
	var before: Dictionary = water.get_terrain_source_stats()
	data.get_image(0).set_pixel(20, 21, Color(-1.0, 0, 0))
	data.notify_region_change(Rect2i(20, 21, 1, 1), HTerrainDataStandIn.CHANNEL_SPLAT)
	var ignored: Dictionary = water.get_terrain_source_stats()
	data.notify_region_change(Rect2i(20, 21, 1, 1), HTerrainDataStandIn.CHANNEL_HEIGHT)
	var after: Dictionary = water.get_terrain_source_stats()
	var rect: Rect2i = after["last_rect"]
	print("   region_changed (20, 21): cell (22, 21) %.4f, rect %s, reads %d/%d/%d" % [
			_cell(water, 22, 21), rect, before["reads"], ignored["reads"], after["reads"]])
	_check(ignored["reads"] == before["reads"], "a splat-channel change reads nothing")
	_near(_cell(water, 22, 21), -2.0 - 3.0, SAME_HEIGHT, "the height edit reaches cell (22, 21)")
	_check(after["reads"] == before["reads"] + 1 and rect.get_area() <= 16,
			"only its rectangle was read (≤ 4 × 4 cells)")
	# HTerrain's Holes brush paints the color map's alpha (below 0.5: a hole) and notifies the
	# color channel; pixel (10, 12) lies under cell (12, 12) since the move.
	data.get_image(HTerrainDataStandIn.CHANNEL_COLOR).set_pixel(10, 12, Color(1, 1, 1, 0))
	data.notify_region_change(Rect2i(10, 12, 1, 1), HTerrainDataStandIn.CHANNEL_COLOR)
	var holed := _cell(water, 12, 12)
	data.get_image(HTerrainDataStandIn.CHANNEL_COLOR).set_pixel(10, 12, Color(1, 1, 1, 1))
	data.notify_region_change(Rect2i(10, 12, 1, 1), HTerrainDataStandIn.CHANNEL_COLOR)
	var filled := _cell(water, 12, 12)
	print("   hole painted on pixel (10, 12): cell (12, 12) %.1f m; erased: %.4f m" % [holed, filled])
	_near(holed, WALL, 1.0, "a hole in the color map's alpha is a wall (terrain_holes WALL)")
	_near(filled, -2.0 + 1.5, SAME_HEIGHT, "erasing the hole gives the ground back")
	water.free()
	terrain.free()


## A CollisionShape3D with a 17² HeightMapShape3D, moved: the bump lands under its cell, and a
## new map_data reaches the water as the rectangle that differs.
func _test_height_map_shape_and_its_changes() -> void:
	print("-- HeightMapShape3D")
	var shape := HeightMapShape3D.new()
	shape.map_width = 17
	shape.map_depth = 17
	var heights := PackedFloat32Array()
	heights.resize(17 * 17)
	heights.fill(0.25)
	heights[3 * 17 + 12] = 1.5
	shape.map_data = heights
	var holder := CollisionShape3D.new()
	holder.shape = shape
	holder.position = Vector3(3.0, 1.0, -2.0)
	var body := StaticBody3D.new()
	body.add_child(holder)
	root.add_child(body)
	var water := _new_water()
	root.add_child(water)
	water.terrain_source = water.get_path_to(holder)
	var fitted: bool = water.fit_to_terrain_source(1)
	print("   fitted %s: grid %s at %s; cell (12, 3) %.4f" % [fitted, water.grid_size,
			water.global_position, _cell(water, 12, 3)])
	_check(fitted and water.grid_size == Vector2i(17, 17), "fit gives 17 × 17 cells")
	_near(_cell(water, 12, 3) + water.global_position.y, 2.5, SAME_HEIGHT,
			"the bump on vertex (12, 3) is under cell (12, 3) at global 1 + 1.5 m")
	var before: Dictionary = water.get_terrain_source_stats()
	heights[10 * 17 + 2] = -0.75
	shape.map_data = heights
	var after: Dictionary = water.get_terrain_source_stats()
	print("   new map_data: cell (2, 10) %.4f, rect %s" % [_cell(water, 2, 10), after["last_rect"]])
	_near(_cell(water, 2, 10) + water.global_position.y, 0.25, SAME_HEIGHT,
			"the changed vertex reaches cell (2, 10)")
	_check(after["reads"] == before["reads"] + 1 and (after["last_rect"] as Rect2i).get_area() <= 16,
			"only the rectangle that differs was read")
	water.free()
	body.free()


## A box on a StaticBody3D under part of the grid: bake_terrain() finds its top under the cells
## it covers, and the cells where rays miss it are walls.
func _test_static_geometry_baked_by_rays() -> void:
	print("-- static geometry by rays")
	var body := StaticBody3D.new()
	var holder := CollisionShape3D.new()
	var box := BoxShape3D.new()
	box.size = Vector3(8.0, 2.0, 8.0)
	holder.shape = box
	body.add_child(holder)
	body.position = Vector3(0.0, 3.0, 0.0)
	root.add_child(body)
	await physics_frame
	var water := _new_water()
	water.grid_size = Vector2i(16, 16)
	water.cell_size = 1.0
	root.add_child(water)
	water.terrain_source = water.get_path_to(body)
	var baked: bool = water.bake_terrain()
	print("   baked %s: cell (8, 8) %.4f, cell (0, 0) %.1f" % [baked, _cell(water, 8, 8),
			_cell(water, 0, 0)])
	_near(_cell(water, 8, 8), 4.0, 1e-3, "a cell over the box has its top, 3 + 1 m")
	_near(_cell(water, 0, 0), WALL, 1.0, "a cell the rays miss is a wall")
	water.free()
	body.free()


## With terrain_write_back off (the default) digging leaves the source alone; on, the dug
## vertices of a Terrain3D and of an HTerrain take the water's new ground (Terrain3D through
## set_height and update_maps of the edited region only, HTerrain through its image and
## notify_region_change), and the water keeps that ground when the source's signal comes back.
func _test_writing_back() -> void:
	print("-- writing back")
	var terrain: Node3D = Terrain3DStandIn.new(16, 1.0)
	terrain.data.add_flat_region(Vector2i(0, 0), 1.0)
	terrain.data.add_flat_region(Vector2i(1, 0), 1.0)
	root.add_child(terrain)
	var water := _new_water()
	root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	water.fit_to_terrain_source(1)
	_check(not water.terrain_write_back, "terrain_write_back is off by default")
	water.modify_terrain(Vector3(5.0, 0.0, 5.0), -2.0, 2.0)
	var untouched: float = terrain.data.get_height(Vector3(5.0, 0.0, 5.0))
	water.terrain_write_back = true
	water.modify_terrain(Vector3(5.0, 0.0, 5.0), -2.0, 2.0)
	var cell := _cell(water, 5, 5)
	var source: float = terrain.data.get_height(Vector3(5.0, 0.0, 5.0))
	var far: float = terrain.data.get_height(Vector3(12.0, 0.0, 12.0))
	print("   Terrain3D: off %.4f; on: cell (5, 5) %.4f, vertex (5, 5) %.4f, far %.4f" % [
			untouched, cell, source, far])
	print("   update_maps: %d call(s) over %d region(s)" % [terrain.data.updates,
			terrain.data.regions_updated])
	_near(untouched, 1.0, SAME_HEIGHT, "off, the Terrain3D keeps its ground")
	_check(cell < 1.0 - 1.0, "the water's ground was dug twice (%.4f m)" % cell)
	_near(source, cell, SAME_HEIGHT,
			"on, the dug vertex (5, 5) of the Terrain3D takes the cell's ground")
	_near(far, 1.0, SAME_HEIGHT, "a vertex outside the brush is untouched")
	_check(terrain.data.updates == 1 and terrain.data.regions_updated == 1,
			"update_maps ran once, for the one region edited")
	water.free()
	terrain.free()

	var data: Resource = HTerrainDataStandIn.new(17, 0.0)
	var hterrain: Node3D = HTerrainStandIn.new(data)
	root.add_child(hterrain)
	water = _new_water()
	root.add_child(water)
	water.terrain_source = water.get_path_to(hterrain)
	water.fit_to_terrain_source(1)
	water.terrain_write_back = true
	var signalled: Array[Rect2i] = []
	data.region_changed.connect(
			func(rect: Rect2i, _c: int, _i: int) -> void: signalled.append(rect))
	water.modify_terrain(Vector3(8.0, 0.0, 8.0), 1.5, 2.0)
	cell = _cell(water, 8, 8)
	var pixel: float = data.get_image(0).get_pixel(8, 8).r
	print("   HTerrain: cell (8, 8) %.4f, pixel %.4f, region_changed %s" % [cell, pixel, signalled])
	_check(cell > 1.0, "the water's ground was raised (%.4f m)" % cell)
	_near(pixel, cell, SAME_HEIGHT, "the HTerrain's pixel (8, 8) takes the cell's ground")
	_check(signalled.size() == 1 and signalled[0].has_point(Vector2i(8, 8))
			and signalled[0].get_area() < 17 * 17,
			"notify_region_change names the rectangle written")
	_near(_cell(water, 8, 8), cell, SAME_HEIGHT, "the water keeps that ground after re-reading it")
	water.free()
	hterrain.free()


## Nodes that are none of the sources, a Terrain3D whose data lacks a method, and a path to
## nothing are refused with an error naming what was expected; the ground stays as it was.
func _test_bad_sources_are_refused() -> void:
	print("-- bad sources")
	var plain := Node3D.new()
	root.add_child(plain)
	var broken: Node3D = Terrain3DStandIn.new(16, 1.0)
	broken.data.free()
	broken.data = Object.new()
	root.add_child(broken)
	var water := _new_water()
	water.grid_size = Vector2i(8, 8)
	root.add_child(water)
	water.rebuild()
	var flat := _cell(water, 2, 2)
	water.terrain_source = water.get_path_to(plain)
	water.rebuild()
	var message: String = water.get_last_error()
	print("   plain Node3D: \"%s\"" % message)
	_check(message.contains("is none of") and message.contains("HeightMapShape3D"),
			"a plain Node3D is refused, naming the kinds of source")
	_check(_cell(water, 2, 2) == flat, "the ground is kept")
	water.terrain_source = water.get_path_to(broken)
	water.rebuild()
	message = water.get_last_error()
	print("   Terrain3D without data methods: \"%s\"" % message)
	_check(message.contains("get_regions_active"), "a Terrain3D whose data lacks a method names it")
	water.terrain_source = NodePath("../nothing_here")
	water.rebuild()
	message = water.get_last_error()
	print("   no node: \"%s\"" % message)
	_check(message.contains("no node at"), "a path to nothing is refused")
	_check(not water.fit_to_terrain_source(0), "fit_to_terrain_source(0) is refused")
	print("   \"%s\"" % water.get_last_error())
	water.free()
	broken.free()
	plain.free()
