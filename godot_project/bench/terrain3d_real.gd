extends SceneTree
## What following the REAL Terrain3D costs (res://bench/terrain_source.gd does the same on the
## stand-in): side² flat regions of region_size² vertices 1 m apart, a CPU-backend PipeWater
## fitted one cell a vertex. It prints the median of 5 whole reads (bake_terrain and the query
## that applies it), of 20 strokes of Terrain3DEditor (Sculpt, Add, a 16 m brush: what the editor
## plugin calls as the mouse moves), timed from operate() to the water holding the new ground and
## from maps_edited to it, and of 20 discs of radius 8 raised with set_height + update_maps of
## the edited region, timed from maps_edited. A benchmark, not a test. Terrain3D is not shipped:
## run it in a project holding addons/terrain_3d (built from its source, Godot 4.5+) and
## addons/pipe_water, with this file at res://bench/:
## [codeblock]
## $GODOT --headless --path <that project> -s res://bench/terrain3d_real.gd -- 1024 4
## [/codeblock]

const READS := 5
const STROKES := 20


func _initialize() -> void:
	_run.call_deferred()


func _median(values: Array) -> float:
	values.sort()
	return values[values.size() / 2]


func _run() -> void:
	var args := OS.get_cmdline_user_args()
	var region_size := int(args[0]) if args.size() > 0 else 1024
	var side := int(args[1]) if args.size() > 1 else 4
	var t = ClassDB.instantiate(&"Terrain3D")
	t.vertex_spacing = 1.0
	root.add_child(t)
	# Terrain3D takes region_size once its data exists (before add_child it stays 256).
	t.region_size = region_size
	var d = t.data
	for y in side:
		for x in side:
			d.add_region_blank(Vector2i(x, y), false)
	for r in d.get_regions_active():
		r.height_map.fill(Color(1.0, 0, 0))
	d.update_maps(3, true, false)
	var water = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.show_mesh = false
	water.detail_waves = false
	water.paused = true
	water.update_textures = false
	water.initial_water_level = 0.0
	root.add_child(water)
	water.terrain_source = water.get_path_to(t)
	var started := Time.get_ticks_usec()
	var fitted: bool = water.fit_to_terrain_source(1)
	print(
		(
			"PipeWater over the real Terrain3D, Godot %s, %d processors: %s"
			% [Engine.get_version_info().string, OS.get_processor_count(), OS.get_processor_name()]
		)
	)
	print(
		(
			"fit and build %s: %s cells, %.1f ms"
			% [fitted, water.grid_size, (Time.get_ticks_usec() - started) / 1000.0]
		)
	)
	var reads := []
	for i in READS:
		started = Time.get_ticks_usec()
		water.bake_terrain()
		water.get_terrain_source_stats()
		reads.append((Time.get_ticks_usec() - started) / 1000.0)
	print(
		(
			"whole read of %d² vertices: median %.1f ms (%s)"
			% [region_size * side, _median(reads), reads]
		)
	)
	var img := Image.create(64, 64, false, Image.FORMAT_RF)
	img.fill(Color(1, 0, 0))
	var ed = ClassDB.instantiate(&"Terrain3DEditor")
	ed.set_terrain(t)
	ed.set_tool(1)  # SCULPT
	ed.set_operation(0)  # ADD
	ed.set_brush_data(
		{
			"brush": [img, ImageTexture.create_from_image(img)],
			"size": 16.0,
			"strength": 10.0,
			"auto_regions": false,
			"align_to_view": false,
			"mouse_pressure": 1.0
		}
	)
	var whole := []
	var ours := []
	var stroke_reads := []
	var n: int = region_size * side
	for i in STROKES:
		var at := Vector3(37 + (i * 977) % (n - 80), 0, 41 + (i * 613) % (n - 80))
		ed.start_operation(at)
		started = Time.get_ticks_usec()
		ed.operate(at, 0.0)
		var edited := Time.get_ticks_usec()
		var stats: Dictionary = water.get_terrain_source_stats()
		var done := Time.get_ticks_usec()
		stroke_reads.append(stats.reads)
		ed.stop_operation()
		whole.append((done - started) / 1000.0)
		ours.append((done - edited) / 1000.0)
		if i == 0:
			print(
				(
					"a stroke's rectangle: %s; ground at its centre: Terrain3D %.3f, water %.3f"
					% [stats.last_rect, d.get_height(at), water.get_terrain_height(at)]
				)
			)
	print(
		(
			"one SCULPT stroke (16 m brush) reaching the water: median %.2f ms from operate() (%s)"
			% [_median(whole), whole]
		)
	)
	print("  reads after each stroke: %s" % [stroke_reads])
	print(
		(
			"  of which the water's part (maps_edited queued -> applied): median %.2f ms (%s)"
			% [_median(ours), ours]
		)
	)
	var sh := []
	for i in STROKES:
		var c := Vector2i(37 + (i * 577) % (n - 80), 41 + (i * 313) % (n - 80))
		started = Time.get_ticks_usec()
		for dz in range(-8, 9):
			for dx in range(-8, 9):
				if dx * dx + dz * dz <= 64:
					d.set_height(Vector3(c.x + dx, 0, c.y + dz), 1.5)
		var r = d.get_regionp(Vector3(c.x, 0, c.y))
		r.edited = true
		d.update_maps(0, false, false)
		r.edited = false
		var painted := Time.get_ticks_usec()
		d.maps_edited.emit(AABB(Vector3(c.x - 8, -10, c.y - 8), Vector3(16, 20, 16)))
		water.get_terrain_source_stats()
		sh.append((Time.get_ticks_usec() - painted) / 1000.0)
	print(
		(
			(
				"set_height disc (r 8) + update_maps, then maps_edited -> water: "
				+ "median %.2f ms after update_maps (%s)"
			)
			% [_median(sh), sh]
		)
	)
	water.free()
	ed.free()
	t.free()
	quit(0)
