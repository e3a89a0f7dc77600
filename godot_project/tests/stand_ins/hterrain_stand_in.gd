extends Node3D
## A stand-in for HTerrain (Zylann/godot_heightmap_plugin 1.7; checked by hand against 1.8.1 dev,
## commit f490f77; addons/zylann.hterrain/
## hterrain.gd), written from its documented API: [code]map_scale[/code], [code]centered[/code],
## [code]get_data()[/code], [code]get_internal_transform()[/code] (pixel (x, z) and raw height y
## to global) and [code]world_to_map()[/code].

var map_scale := Vector3.ONE
var centered := false
var _data: Resource


func _init(data: Resource) -> void:
	_data = data


func get_data() -> Resource:
	return _data


func get_internal_transform() -> Transform3D:
	var gt := global_transform
	var it := Transform3D(gt.basis * Basis().scaled(map_scale), gt.origin)
	if centered and _data != null:
		var half_size: float = 0.5 * (_data.get_resolution() - 1.0)
		it.origin += it.basis * (-Vector3(half_size, 0, half_size))
	return it


func world_to_map(world_pos: Vector3) -> Vector3:
	return get_internal_transform().affine_inverse() * world_pos
