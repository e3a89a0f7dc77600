extends "res://tests/test_base.gd"
## Headless tests of the PipeWater node on the triangular lattice (NEIGHBOURS_TRIANGULAR): its
## queries, edits and surface mesh on the lattice's cells, and the refusal of what is written for
## the square grid only.
##
## Run from the repository root (cargo xtask test does this when GODOT is set):
## [codeblock]
## $GODOT --headless --path godot_project --fixed-fps 60 -s res://tests/test_lattice.gd
## [/codeblock]
## Ends with PIPEWATER TESTS PASSED or PIPEWATER TESTS FAILED. The refusals print the Godot errors
## and warnings they check.

## Heights and depths read back within this (m): queries are linear over f32 cell values.
const HEIGHT_TOLERANCE := 1.0e-3
## Volumes agree within this (m³): edits round to whole depth quanta of 2⁻²⁰ m per cell.
const VOLUME_TOLERANCE := 1.0e-3
## Mesh vertices lie within this of the lattice's centres and edges (m, f32 positions).
const POSITION_TOLERANCE := 1.0e-4


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater triangular lattice tests, Godot %s" % Engine.get_version_info().string)
	await _test_the_triangular_lattice_places_queries_edits_and_the_mesh_on_its_cells()
	await _test_what_the_triangular_lattice_does_not_run_is_refused()
	_finish()

## Local XZ of the centre of cell [param cell] of a [param size] triangular lattice of
## [param dx] m cells (pipewater_core::Lattice::cell_centre, written out here): odd rows lie half
## a cell further along +X, rows dx·√3/2 apart along Z, the lattice centred on the node.
func _lattice_centre(cell: Vector2i, size: Vector2i, dx: float) -> Vector2:
	var row := dx * sqrt(3.0) / 2.0
	return Vector2((cell.x + 0.5 + 0.5 * (cell.y % 2)) * dx - (size.x + 0.5) * dx / 2.0,
			(cell.y + 0.5) * row - size.y * row / 2.0)


## On NEIGHBOURS_TRIANGULAR the node's queries, edits and drawn surface follow the lattice: a
## bump of ground in one cell reads back at that cell's lattice centre (not at the square grid's
## centre of the same array cell), water added at a lattice centre with a radius under half a
## cell lands in that one hexagon (depth = volume / (dx²·√3/2)) and reads back there, the
## lattice ends dx·H·√3/4 from the node along Z (is_inside), and the surface mesh has a vertex
## on every sampled cell's lattice centre and spans the lattice's Z extent, with
## triangular_lattice set on its material.
func _test_the_triangular_lattice_places_queries_edits_and_the_mesh_on_its_cells() -> void:
	print("-- the triangular lattice: queries, edits and the mesh on its cells")
	var size := Vector2i(16, 12)
	var dx := 2.0
	var origin := Vector3(4.0, 1.0, -2.0)
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.paused = true
	water.backend = PipeWater.BACKEND_CPU
	water.grid_size = size
	water.cell_size = dx
	water.neighbour_mode = PipeWater.NEIGHBOURS_TRIANGULAR
	water.momentum_advection = false
	water.detail_waves = false
	water.initial_water_level = -10.0
	water.position = origin
	var bump := Vector2i(5, 7)
	var heights := PackedFloat32Array()
	heights.resize(size.x * size.y)
	heights.fill(0.0)
	heights[bump.y * size.x + bump.x] = 3.0
	water.terrain_heights = heights
	root.add_child(water)
	water.rebuild()
	await process_frame
	var at := _lattice_centre(bump, size, dx)
	var square_centre := Vector2((bump.x + 0.5) * dx - size.x * dx / 2.0,
			(bump.y + 0.5) * dx - size.y * dx / 2.0)
	var on_lattice: float = water.get_terrain_height(origin + Vector3(at.x, 0.0, at.y))
	var on_square: float = water.get_terrain_height(
			origin + Vector3(square_centre.x, 0.0, square_centre.y))
	print("   bump cell %s: lattice centre %s reads %.4f m, the square grid's centre %s reads %.4f m"
			% [
			bump, at, on_lattice - origin.y, square_centre, on_square - origin.y])
	_near(on_lattice - origin.y, 3.0, HEIGHT_TOLERANCE,
			"the 3 m bump reads back at its cell's lattice centre")
	var east := _lattice_centre(bump + Vector2i(1, 0), size, dx)
	var east_height: float = water.get_terrain_height(origin + Vector3(east.x, 0.0, east.y))
	_near(east_height - origin.y, 0.0, HEIGHT_TOLERANCE,
			"its east neighbour's lattice centre, dx further, reads flat ground")
	var wet := Vector2i(10, 3)
	var spot := _lattice_centre(wet, size, dx)
	var global_spot := origin + Vector3(spot.x, 0.0, spot.y)
	var hexagon := dx * dx * sqrt(3.0) / 2.0
	var added: float = water.add_water(global_spot, 2.0 * hexagon, 0.4 * dx)
	_near(added, 2.0 * hexagon, VOLUME_TOLERANCE,
			"add_water at a lattice centre adds the volume asked")
	_near(water.get_depth(global_spot), 2.0, HEIGHT_TOLERANCE,
			"that volume stands 2 m deep in the one hexagon of dx²·√3/2 it landed in")
	_near(water.get_height(global_spot), origin.y + 2.0, HEIGHT_TOLERANCE,
			"get_height there is the ground plus 2 m")
	var neighbour := _lattice_centre(wet + Vector2i(0, 1), size, dx)
	_near(water.get_depth(origin + Vector3(neighbour.x, 0.0, neighbour.y)), 0.0, HEIGHT_TOLERANCE,
			"the cell south of it, one lattice step away, stays dry")
	var half_z := size.y * dx * sqrt(3.0) / 4.0
	var beyond := origin + Vector3(0.0, 0.0, half_z + 0.5)
	_check(water.is_inside(origin + Vector3(0.0, 0.0, half_z - 0.1)) and not water.is_inside(beyond)
			and is_inf(water.get_height(beyond)),
			"the lattice ends %.3f m from the node along Z (the square grid would reach %.1f m)" % [
				half_z, size.y * dx / 2.0])
	water.show_mesh = true
	water.step(1.0 / 60.0)
	var surface: MeshInstance3D = null
	for child in water.get_children(true):
		if child is MeshInstance3D:
			surface = child
	_check(surface != null and surface.mesh != null, "the node shows its surface mesh")
	if surface != null and surface.mesh != null:
		var vertices: PackedVector3Array = surface.mesh.surface_get_arrays(0)[Mesh.ARRAY_VERTEX]
		var farthest := 0.0
		for cell in [bump, wet, Vector2i(0, 0), Vector2i(size.x - 1, size.y - 1), Vector2i(3, 1)]:
			var centre := _lattice_centre(cell, size, dx)
			var nearest := INF
			for v in vertices:
				nearest = minf(nearest, Vector2(v.x, v.z).distance_to(centre))
			farthest = maxf(farthest, nearest)
		var z_max := 0.0
		for v in vertices:
			z_max = maxf(z_max, absf(v.z))
		_check(farthest < POSITION_TOLERANCE,
				"every sampled cell has a mesh vertex on its lattice centre (farthest %s m)" % farthest)
		_near(z_max, half_z, POSITION_TOLERANCE,
				"the mesh spans the lattice's Z extent, not the square grid's %.1f m" % [size.y * dx / 2.0])
		var material := surface.material_override as ShaderMaterial
		_check(material != null and material.get_shader_parameter(&"triangular_lattice") == true,
				"its material is told the cells lie on the triangular lattice")
	water.neighbour_mode = PipeWater.NEIGHBOURS_EIGHT
	water.step(1.0 / 60.0)
	if surface != null and surface.mesh != null:
		var vertices: PackedVector3Array = surface.mesh.surface_get_arrays(0)[Mesh.ARRAY_VERTEX]
		var z_max := 0.0
		for v in vertices:
			z_max = maxf(z_max, absf(v.z))
		_near(z_max, size.y * dx / 2.0, POSITION_TOLERANCE,
				"back on eight neighbours the mesh spans the square grid again")
	await _free(water)


## On NEIGHBOURS_TRIANGULAR what is written for the square grid does not run quietly wrong:
## erosion and a terrain_source are refused naming the neighbour mode's range (the ground stays
## as terrain_heights gave it), a PipeWaterBody hull is not coupled (an error naming
## neighbour_mode, said once, and the crate gets no buoyancy: it falls), and detail waves stay off
## (a warning; add_ripple answers false).
func _test_what_the_triangular_lattice_does_not_run_is_refused() -> void:
	print("-- the triangular lattice refuses erosion, terrain sources, floating bodies and detail "
			+ "waves (each prints a PipeWater error or warning)")
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.grid_size = Vector2i(24, 24)
	water.cell_size = 1.0
	water.neighbour_mode = PipeWater.NEIGHBOURS_TRIANGULAR
	water.momentum_advection = false
	water.initial_water_level = 2.0
	water.show_mesh = false
	root.add_child(water)
	water.rebuild()
	await process_frame
	_check(not water.add_ripple(Vector3.ZERO, 0.2, 2.0),
			"detail waves (on by default) do not run on the lattice: add_ripple answers false")
	var crate := _make_crate(Vector3(0.0, 2.0, 0.0), Vector3(2.0, 1.0, 2.0), 500.0, water)
	water.clear_last_error()
	root.add_child(crate)
	for i in 40:
		await physics_frame
	var message: String = water.get_last_error()
	print("   crate after 40 physics frames at y = %.3f m (it would float at about 2.25 m)"
			% crate.position.y)
	_check(message.contains("neighbour_mode") and message.contains("NEIGHBOURS_EIGHT")
			and message.contains("PipeWaterBody"),
			"a hull is refused naming neighbour_mode and its range: \"%s\"" % message)
	_check(crate.position.y < 1.0,
			"the refused hull gets no buoyancy: the crate fell to y = %.3f m" % crate.position.y)
	crate.queue_free()
	var body := StaticBody3D.new()
	var shape_node := CollisionShape3D.new()
	var shape := HeightMapShape3D.new()
	shape.map_width = 8
	shape.map_depth = 8
	var data := PackedFloat32Array()
	data.resize(64)
	data.fill(3.0)
	shape.map_data = data
	shape_node.shape = shape
	body.add_child(shape_node)
	root.add_child(body)
	water.clear_last_error()
	water.terrain_source = water.get_path_to(shape_node)
	water.step(1.0 / 60.0)
	message = water.get_last_error()
	_check(message.contains("terrain_source") and message.contains("NEIGHBOURS_EIGHT"),
			"a terrain_source is refused on the lattice naming neighbour_mode's range: \"%s\""
			% message)
	_near(water.get_terrain_height(Vector3(1.0, 0.0, 1.0)), 0.0, HEIGHT_TOLERANCE,
			"the ground stays as terrain_heights gave it, not the source's 3 m")
	water.terrain_source = NodePath()
	body.queue_free()
	var erosion: Resource = ClassDB.instantiate(&"PipeWaterErosion")
	erosion.set(&"enabled", true)
	water.clear_last_error()
	water.erosion = erosion
	water.step(1.0 / 60.0)
	message = water.get_last_error()
	_check(message.contains("neighbours") and message.contains("four or eight"),
			"erosion is refused on the lattice naming neighbours and its range: \"%s\"" % message)
	_near(water.get_total_water(), 24.0 * 24.0 * sqrt(3.0) / 2.0 * 2.0, 0.01,
			"the water is all there after the refusals (2 m over 576 hexagons of √3/2 m²)")
	await _free(water)
