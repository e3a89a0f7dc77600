@tool
extends HBoxContainer
## The PipeWater tools above the 3D viewport while a PipeWater or a PipeWaterWorld is selected:
## the brushes, their radius and strength, Bake / Clear for the water stored in the scene, and
## (for a PipeWater) Fit to terrain.

## The "Bake" button was pressed.
signal bake_pressed
## The "Clear" button was pressed.
signal clear_pressed
## The "Fit to terrain" button was pressed.
signal fit_pressed

const Stroke := preload("res://addons/pipe_water/editor/stroke.gd")
## Each brush's button: tool, label, tooltip.
const BRUSHES := [
	[Stroke.Tool.ADD_WATER, "Add", "Add water: hold the left button; strength is metres of depth "
			+ "per second at the brush's centre."],
	[Stroke.Tool.REMOVE_WATER, "Remove", "Remove water: hold the left button; strength is metres "
			+ "of depth per second at the centre."],
	[Stroke.Tool.FILL, "Fill", "Fill a basin: click a point on a bank, and the basin below it "
			+ "fills until its surface stands there."],
	[Stroke.Tool.RAISE, "Raise", "Raise the terrain: strength is metres per second at the "
			+ "centre. The water depth is kept."],
	[Stroke.Tool.LOWER, "Lower", "Lower (dig) the terrain: strength is metres per second at the "
			+ "centre. The water depth is kept."],
	[Stroke.Tool.SMOOTH, "Smooth", "Smooth the terrain: strength is the share of the way to "
			+ "each cell's neighbourhood mean per second."],
]

## The brush chosen; [constant Stroke.Tool.NONE] lets the viewport select and move nodes.
var tool: Stroke.Tool = Stroke.Tool.NONE
## Radius of the brush, m.
var radius: float = 4.0:
	set = set_radius
## Strength of the brush (see the tooltips).
var strength: float = 1.0:
	set = set_strength

var _buttons := {}
var _radius_box := SpinBox.new()
var _strength_box := SpinBox.new()
var _status := Label.new()
var _fit: Button


func _init() -> void:
	var group := ButtonGroup.new()
	group.allow_unpress = true
	add_child(VSeparator.new())
	for brush: Array in BRUSHES:
		var button := Button.new()
		button.text = brush[1]
		button.tooltip_text = brush[2]
		button.toggle_mode = true
		button.flat = true
		button.button_group = group
		button.toggled.connect(_on_brush_toggled.bind(brush[0]))
		add_child(button)
		_buttons[brush[0]] = button
	_add_number("Radius", _radius_box, 0.1, 1000.0, 0.1, " m", radius, set_radius)
	_add_number("Strength", _strength_box, 0.01, 100.0, 0.01, "", strength, set_strength)
	add_child(VSeparator.new())
	var bake := Button.new()
	bake.text = "Bake"
	bake.tooltip_text = ("Store the water as it stands (after painting, after simulate_in_editor "
			+ "ran) in initial_state, in a binary resource beside the scene. Undoable.")
	bake.pressed.connect(bake_pressed.emit)
	add_child(bake)
	var clear := Button.new()
	clear.text = "Clear"
	clear.tooltip_text = ("Empty initial_state: the water starts from initial_water_level again "
			+ "(a world: dry).")
	clear.pressed.connect(clear_pressed.emit)
	add_child(clear)
	var fit := Button.new()
	fit.text = "Fit to terrain"
	fit.tooltip_text = ("Set grid_size, cell_size and the node's placement from terrain_source: "
			+ "one cell per terrain vertex, lined up with them. Undoable.")
	fit.pressed.connect(fit_pressed.emit)
	add_child(fit)
	_fit = fit
	add_child(_status)


## Chooses [param brush] (and presses its button); NONE releases every button.
func choose(brush: Stroke.Tool) -> void:
	for key: Stroke.Tool in _buttons:
		(_buttons[key] as Button).set_pressed_no_signal(key == brush)
	tool = brush


## Shows "Fit to terrain" (a [PipeWater] fits itself to its terrain; a world's size is its own).
func set_fit_available(available: bool) -> void:
	_fit.visible = available


func set_radius(value: float) -> void:
	radius = value
	_radius_box.set_value_no_signal(value)


func set_strength(value: float) -> void:
	strength = value
	_strength_box.set_value_no_signal(value)


## Shows [param text] after the buttons ([param warning] in the editor's warning colour).
func show_status(text: String, warning: bool = false) -> void:
	_status.text = text
	if warning:
		_status.add_theme_color_override("font_color", Color(1.0, 0.8, 0.3))
	else:
		_status.remove_theme_color_override("font_color")


func _add_number(label: String, box: SpinBox, lo: float, hi: float, step: float, suffix: String,
		value: float, setter: Callable) -> void:
	var text := Label.new()
	text.text = label
	add_child(text)
	box.min_value = lo
	box.max_value = hi
	box.step = step
	box.suffix = suffix
	box.allow_greater = true
	box.value = value
	box.value_changed.connect(setter)
	add_child(box)


func _on_brush_toggled(pressed: bool, brush: Stroke.Tool) -> void:
	if pressed:
		tool = brush
	elif tool == brush:
		tool = Stroke.Tool.NONE
