extends SceneTree
## What following a terrain source costs: reading a whole Terrain3D world into the water, and one
## brush dab reaching it. The Terrain3D is the stand-in of res://tests/stand_ins/ (the data
## layout of Terrain3D 1.0: regions of region_size² FORMAT_RF height and control maps), 4 × 4
## regions of 1024² vertices 1 m apart (4096² vertices), fitted one cell a vertex, on the CPU
## backend. A benchmark, not a test. From the repository root, after cargo xtask build --release:
## [codeblock]
## $GODOT --headless --path godot_project -s res://bench/terrain_source.gd -- 1024 4
## [/codeblock]
## Arguments: region size (default 1024) and regions a side (default 4). It prints the median of
## 5 whole reads (bake_terrain, then the query that applies it: every map read, resampled, holes
## resolved, set as the terrain with the water kept) and of 20 dabs (a disc of 8 m radius
## raised with set_height, then maps_edited with its AABB and the query that applies it: the
## rectangle's maps read and set through set_terrain_region).

const Terrain3DStandIn := preload("res://tests/stand_ins/terrain3d_stand_in.gd")
const READS := 5
const DABS := 20
const DAB_RADIUS := 8


func _initialize() -> void:
	_run.call_deferred()


func _median(values: Array) -> float:
	values.sort()
	return values[values.size() / 2]


func _run() -> void:
	var args := OS.get_cmdline_user_args()
	var region_size := int(args[0]) if args.size() > 0 else 1024
	var side := int(args[1]) if args.size() > 1 else 4
	var terrain: Node3D = Terrain3DStandIn.new(region_size, 1.0)
	for y in side:
		for x in side:
			terrain.data.add_flat_region(Vector2i(x, y), 1.0)
	root.add_child(terrain)
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.show_mesh = false
	water.detail_waves = false
	water.paused = true
	water.update_textures = false
	water.initial_water_level = 0.0
	root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	var started := Time.get_ticks_usec()
	var fitted: bool = water.fit_to_terrain_source(1)
	print("PipeWater terrain source benchmark, Godot %s, %d processors: %s" % [
			Engine.get_version_info().string, OS.get_processor_count(), OS.get_processor_name()])
	print("fit and build %s: %s cells, %.1f ms" % [fitted, water.grid_size,
			(Time.get_ticks_usec() - started) / 1000.0])
	var reads := []
	for i in READS:
		started = Time.get_ticks_usec()
		water.bake_terrain()
		water.get_terrain_source_stats()
		reads.append((Time.get_ticks_usec() - started) / 1000.0)
	print("whole read of %d² vertices: median %.1f ms (%s)" % [region_size * side, _median(reads),
			reads])
	var dabs := []
	var n := region_size * side
	for i in DABS:
		var centre := Vector2i(37 + (i * 977) % (n - 80), 41 + (i * 613) % (n - 80))
		started = Time.get_ticks_usec()
		for dy in range(-DAB_RADIUS, DAB_RADIUS + 1):
			for dx in range(-DAB_RADIUS, DAB_RADIUS + 1):
				if dx * dx + dy * dy <= DAB_RADIUS * DAB_RADIUS:
					terrain.data.set_height(Vector3(centre.x + dx, 0, centre.y + dy), 1.5)
		var painted := Time.get_ticks_usec()
		var box := AABB(Vector3(centre.x - DAB_RADIUS, -10, centre.y - DAB_RADIUS),
				Vector3(2 * DAB_RADIUS, 20, 2 * DAB_RADIUS))
		terrain.data.maps_edited.emit(box)
		var stats: Dictionary = water.get_terrain_source_stats()
		dabs.append((Time.get_ticks_usec() - painted) / 1000.0)
		if i == 0:
			print("a dab's rectangle: %s (painting it in GDScript took %.1f ms, not counted)" % [
					stats["last_rect"], (painted - started) / 1000.0])
	print("one dab reaching the water: median %.2f ms (%s)" % [_median(dabs), dabs])
	water.free()
	terrain.free()
	quit(0)
