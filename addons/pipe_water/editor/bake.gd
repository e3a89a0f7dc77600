@tool
extends RefCounted
## Water baked into a scene: where the editor's "Bake" stores a [PipeWater]'s or a
## [PipeWaterWorld]'s water, and how.
##
## A [PipeWaterState] holds up to a few bytes a cell (a world's, its pages with water or set
## ground), too much for a text scene, so it lives in a
## binary resource beside the scene, [code]<scene>_<node path>.res[/code] (for
## [code]res://levels/valley.tscn[/code] and a node [code]Water[/code]:
## [code]res://levels/valley_Water.res[/code]), saved with [constant ResourceSaver.FLAG_COMPRESS],
## and the scene refers to it through the node's [code]initial_state[/code].

## Flags the state is saved with: compressed (Zstandard, as Godot compresses binary resources).
const SAVE_FLAGS := ResourceSaver.FLAG_COMPRESS


## The water of [param target] as it stands, as a state for its [code]initial_state[/code]: a
## [PipeWater]'s [method PipeWater.save_state], or a [PipeWaterWorld]'s save wrapped in a
## [PipeWaterState]. Null when the water cannot be read (the reason in its
## [code]get_last_error()[/code]).
static func state_of(target: Node3D) -> PipeWaterState:
	var world := target as PipeWaterWorld
	if world == null:
		return (target as PipeWater).save_state()
	var bytes := world.save_state()
	if bytes.is_empty():
		return null
	var state := PipeWaterState.new()
	state.data = bytes
	state.grid_size = world.world_size
	return state


## The file beside [param scene_path] that holds the baked water of the node at
## [param node_path] (relative to the scene's root; [code].[/code] for the root itself, named
## [param node_name]).
static func path_for(scene_path: String, node_path: NodePath, node_name: String) -> String:
	var key := String(node_path)
	if key == "" or key == ".":
		key = node_name
	key = key.replace("/", "_").validate_filename()
	return "%s_%s.res" % [scene_path.get_basename(), key]


## Saves [param state] as [param path] (compressed) and makes it the resource of that path, so
## that a scene saved with it refers to the file. Returns the saver's error.
static func store(state: PipeWaterState, path: String) -> Error:
	var error := ResourceSaver.save(state, path, SAVE_FLAGS)
	if error == OK:
		state.take_over_path(path)
	return error
