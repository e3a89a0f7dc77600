extends SceneTree
## What the PipeWater test scripts share: counting checks, comparing figures, building a crate
## with a hull, and the closing verdict that cargo xtask reads. Each test script
## [code]extends "res://tests/test_base.gd"[/code].

var _failures: int = 0
var _checks: int = 0


## Counts a check and prints it as [code]ok   - statement[/code] or
## [code]FAIL - statement[/code].
func _check(ok: bool, statement: String) -> void:
	_checks += 1
	if ok:
		print("ok   - %s" % statement)
	else:
		_failures += 1
		print("FAIL - %s" % statement)


## A check that [param actual] is finite and within [param tolerance] of [param expected],
## printing both.
func _near(actual: float, expected: float, tolerance: float, statement: String) -> void:
	var ok: bool = is_finite(actual) and absf(actual - expected) <= tolerance
	_check(ok, "%s: got %.6f, expected %.6f ± %s" % [statement, actual, expected, tolerance])


## Prints the tally and [code]<verdict> PASSED[/code] or [code]<verdict> FAILED[/code] (the
## lines cargo xtask looks for), and quits with exit code 0 or 1.
func _finish(verdict: String = "PIPEWATER TESTS") -> void:
	if _failures == 0:
		print("%d checks passed" % _checks)
		print("%s PASSED" % verdict)
		quit(0)
	else:
		print("%d of %d checks failed" % [_failures, _checks])
		print("%s FAILED" % verdict)
		quit(1)


## A RigidBody3D crate of [param mass] kg at [param at] with a box PipeWaterBody hull of
## [param size] m pushing [param water] (a PipeWater or a PipeWaterWorld; null: the default water)
## and, unless [param with_shape] is false, a box CollisionShape3D of the same size (the shape
## gives the body its inertia). Not yet in the tree.
func _make_crate(at: Vector3, size: Vector3, mass: float, water: Node3D,
		with_shape: bool = true) -> RigidBody3D:
	var crate := RigidBody3D.new()
	crate.mass = mass
	crate.position = at
	if with_shape:
		var shape := CollisionShape3D.new()
		var box := BoxShape3D.new()
		box.size = size
		shape.shape = box
		crate.add_child(shape)
	var hull: Node3D = ClassDB.instantiate(&"PipeWaterBody")
	hull.set(&"shape", 0)
	hull.set(&"size", size)
	hull.set(&"drag", 2.0)
	hull.set(&"water", water)
	crate.add_child(hull)
	return crate


## A PipeWater on the CPU backend over flat ground, filled to [param level], in the tree.
## With [param paused] it is paused before it enters the tree, so no physics frame steps it
## (how many pass before the next process frame follows the machine's speed).
func _make_cpu_water(size: Vector2i, level: float, origin: Vector3, paused := false) -> PipeWater:
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.paused = paused
	water.backend = PipeWater.BACKEND_CPU
	water.grid_size = size
	water.cell_size = 1.0
	water.initial_water_level = level
	water.show_mesh = false
	water.position = origin
	root.add_child(water)
	water.rebuild()
	await process_frame
	return water


func _free(node: Node) -> void:
	node.queue_free()
	await process_frame


## A 20 × 20 pool that has had water added and has run for a second.
func _make_stirred_water() -> PipeWater:
	var water: PipeWater = await _make_cpu_water(Vector2i(20, 20), 1.0, Vector3.ZERO, true)
	water.add_water(Vector3(3, 0, 3), 25.0, 3.0)
	water.add_source(Vector3(-4, 0, -4), 2.0, 1.0)
	for i in 30:
		water.step(1.0 / 30.0)
	return water
