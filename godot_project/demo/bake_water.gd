extends SceneTree
## Makes the demo's baked water, res://demo/main_PipeWater.res, the file the editor's "Bake"
## writes for the PipeWater of res://demo/main.tscn: the valley's lake below the dam filled to
## its level and the reservoir poured behind the dam, still, over the landscape of the scene's
## settings. The editor tools make the same file by hand (Fill on the reservoir's bank, Bake);
## this script makes it again without the editor, after a change to the landscape:
## [codeblock]
## $GODOT --headless --path godot_project -s res://demo/bake_water.gd
## [/codeblock]
## It prints where the spring stands on that terrain, for the Spring node of main.tscn.

const MAIN_SCENE := "res://demo/main.tscn"
const Bake := preload("res://addons/pipe_water/editor/bake.gd")


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	var main: Node3D = (load(MAIN_SCENE) as PackedScene).instantiate()
	var water: PipeWater = main.get_node("PipeWater")
	# Without baked water the demo makes its water by script, as it did before it had any.
	water.initial_state = null
	root.add_child(main)
	var state := water.save_state()
	var path := Bake.path_for(MAIN_SCENE, NodePath("PipeWater"), "PipeWater")
	var error := Bake.store(state, path)
	var spring: Node3D = main.get_node("PipeWater/Spring")
	print("baked %.1f m³ of still water on %s cells into %s (error %d); the spring stands at %s" % [
			state.get_total_water(), state.grid_size, path, error, spring.position])
	main.queue_free()
	await process_frame
	quit(0 if error == OK else 1)
