extends "res://tests/test_base.gd"
## Headless smoke test of the demo scene (res://demo/main.tscn).
##
## Run from the repository root (cargo xtask demo --smoke does this when GODOT is set):
## [codeblock]
## $GODOT --headless --path godot_project --import
## $GODOT --headless --path godot_project --fixed-fps 60 -s res://tests/test_demo_smoke.gd
## [/codeblock]
## Loads the main scene, runs 300 frames, and checks that it started from its baked water to
## the quantum, that the spring (a PipeWaterSource node) delivered its rate and water moved
## below it, that the boat stayed afloat on its hull and under way, and that the water stayed
## finite. Ends with DEMO SMOKE TEST PASSED (exit code 0) or DEMO SMOKE TEST FAILED (exit code
## 1), like tests/run_tests.gd.

const MAIN_SCENE := "res://demo/main.tscn"
const FRAMES := 300
## Depth change (m) below the spring that counts as water having moved: a thousand depth quanta.
const MOVED_DEPTH := 1.0e-3
## The boat's origin stays within this of the water surface (m): its probes sit at the waterline
## when it floats, and it may bob.
const AFLOAT_TOLERANCE := 1.5
## The motor boat's hull displaces its mass in water within this fraction (it pitches and bobs
## under way).
const HULL_VOLUME_TOLERANCE := 0.15
## Speed through the water (m/s) that counts as the motor boat being under way.
const UNDER_WAY_SPEED := 0.5
## Frames run before the first figures are taken.
const SETTLE_FRAMES := 5
## The spring's delivery agrees with rate × time within this fraction (a GPU snapshot lags by up
## to two of the 300 frames).
const SPRING_TOLERANCE := 0.05


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater demo smoke test, Godot %s" % Engine.get_version_info().string)
	if not ClassDB.class_exists(&"PipeWater"):
		_check(false, "the PipeWater class is registered (is the library in addons/pipe_water/bin?)")
		_finish("DEMO SMOKE TEST")
		return
	var scene: PackedScene = load(MAIN_SCENE)
	_check(scene != null, "%s loads" % MAIN_SCENE)
	if scene == null:
		_finish("DEMO SMOKE TEST")
		return
	var main: Node3D = scene.instantiate()
	root.add_child(main)
	# A GPU snapshot may be up to two frames old: let the start-up edits (the reservoir) arrive.
	for i in SETTLE_FRAMES:
		await process_frame
	var water: PipeWater = main.get("water")
	_check_the_baked_start(main, water)
	var spring: PipeWaterSource = main.get_node("PipeWater/Spring")
	var spring_rate: float = spring.rate
	var cell: float = main.get("cell_size")
	var below: Vector3 = spring.global_position + Vector3(6.0 * cell, 0.0, 0.0)
	_check(spring.source_id >= 1 and spring.source_id in water.get_source_ids(),
			"the spring node is placed in its water as source %d (the water's sources: %s)" % [
			spring.source_id, water.get_source_ids()])
	var depth_before: float = water.get_depth(below)
	var added_before: float = water.get_water_ledger()["added"]
	print("backend: %s" % water.get_backend_description())
	print("frame %d: depth %.4f m at %s below the spring, %.1f m³ added so far" % [SETTLE_FRAMES,
			depth_before, below, added_before])
	for i in FRAMES:
		await process_frame
	var depth_after: float = water.get_depth(below)
	var ledger: Dictionary = water.get_water_ledger()
	var from_spring: float = ledger["added"] - added_before
	var expected: float = spring_rate * FRAMES / 60.0
	print(("frame %d: depth %.4f m below the spring; the spring added %.2f m³ " +
			"(%.2f m³/s × %.0f s = %.2f m³); total %.1f m³, ledger expects %.1f m³") % [
			SETTLE_FRAMES + FRAMES, depth_after, from_spring, spring_rate, FRAMES / 60.0, expected,
			ledger["total"], ledger["expected"]])
	_check(absf(depth_after - depth_before) > MOVED_DEPTH,
			"water moved below the spring (depth %.4f -> %.4f m, change > %s m)" % [depth_before,
			depth_after, MOVED_DEPTH])
	_check(absf(from_spring - expected) <= SPRING_TOLERANCE * expected,
			"the spring delivered its rate over %d frames at 60 Hz within %d %%" % [FRAMES,
			roundi(SPRING_TOLERANCE * 100.0)])
	_check(is_finite(ledger["total"]) and absf(ledger["total"] - ledger["expected"]) < 1.0e-3,
			"the water is finite and its ledger balances (total = initial + added - removed ± edges)")
	var boats: Node = main.get_node("Boats")
	_check(boats.get_child_count() >= 1, "a boat is in the scene")
	for boat: RigidBody3D in boats.get_children():
		var at: Vector3 = boat.global_position
		var surface: float = water.get_height(at)
		var ground: float = water.get_terrain_height(at)
		print("boat at %s, water surface %.3f m, ground %.3f m" % [at, surface, ground])
		_check(is_finite(at.y) and absf(at.y - surface) < AFLOAT_TOLERANCE and surface > ground,
				"the boat floats: |%.3f - %.3f| < %.1f m over water (ground %.3f m)" % [at.y,
				surface, AFLOAT_TOLERANCE, ground])
		var hull: Node = boat.get_node_or_null("WaterHull")
		if hull == null or boat.get("thrust") == null or boat.get("thrust") <= 0.0:
			continue
		# Archimedes: the hull displaces the boat's mass in water (1000 kg/m³).
		var displaced: float = hull.get("displaced_volume")
		var expected_volume: float = boat.mass / 1000.0
		var through_water: Vector3 = boat.linear_velocity - water.get_flow_velocity(at)
		through_water.y = 0.0
		print("motor boat: hull displaces %.3f m³ (mass %.0f kg: %.3f m³), %.2f m/s through the water"
				% [displaced, boat.mass, expected_volume, through_water.length()])
		_check(absf(displaced - expected_volume) <= HULL_VOLUME_TOLERANCE * expected_volume,
				"the motor boat's hull displaces its mass in water within %d %%" % roundi(
				HULL_VOLUME_TOLERANCE * 100.0))
		_check(through_water.length() > UNDER_WAY_SPEED,
				"the motor boat is under way: %.2f m/s through the water > %.1f m/s" % [
				through_water.length(), UNDER_WAY_SPEED])
	main.queue_free()
	await process_frame
	_finish("DEMO SMOKE TEST")


## The demo starts from the water baked into its scene: the ledger's initial water is the state's,
## to the quantum.
func _check_the_baked_start(main: Node3D, water: PipeWater) -> void:
	var baked: PipeWaterState = water.initial_state
	_check(baked != null and main.get("baked_water"),
			"the demo starts from the water baked into its scene (%s)" % [
			baked.resource_path if baked != null else "none"])
	if baked == null:
		return
	var cell: float = water.cell_size
	var quantum: float = water.get_depth_quantum() * cell * cell
	var initial: float = water.get_water_ledger()["initial"]
	var stored: float = baked.get_total_water()
	print("baked water: %.6f m³ stored, %.6f m³ at the start (a quantum is %.9f m³)" % [stored,
			initial, quantum])
	_check(absf(initial - stored) < 0.5 * quantum,
			"the run starts with the baked total water to the quantum (|%.9f| m³ < half of %.9f)"
			% [initial - stored, quantum])
