//! Bodies push water: Archimedes, wakes, the Mach-like V of a fast hull, a body that bobs and
//! comes to rest, and the invariants (exact mass ledger, no NaN, depth never negative) with many
//! bodies moving. Every test prints the figures it compares.

use pipewater_core::bodies::{couple, Body, BodyForce, HullShape};
use pipewater_core::glam::Vec3;
use pipewater_core::{scenarios, Grid, Params, Simulation, State};

const DENSITY: f32 = 1000.0;

fn pool(width: u32, height: u32, dx: f32, level: f32) -> State {
    let mut state = State::new(Grid::new(width, height, dx).unwrap());
    state.fill_to_level(level).expect("the test level lies within a cell's depth limit");
    state
}

/// Mean surface (m) over wet cells whose centres lie farther than `clear` m from `(x, z)`.
fn level_away_from(sim: &mut Simulation, x: f32, z: f32, clear: f32) -> f64 {
    let s = sim.snapshot().unwrap();
    let g = s.grid;
    let (mut sum, mut n) = (0.0f64, 0u32);
    for y in 0..g.height {
        for cx in 0..g.width {
            let [px, pz] = g.cell_centre(cx, y);
            let i = g.index(cx, y);
            if ((px - x).powi(2) + (pz - z).powi(2)).sqrt() > clear && s.height[i][3] > 0.0 {
                sum += s.height[i][0] as f64;
                n += 1;
            }
        }
    }
    sum / n as f64
}

fn assert_ledger_exact(sim: &mut Simulation, name: &str) {
    let ledger = sim.ledger().unwrap();
    let total = sim.read_state().unwrap().total_quanta();
    println!("{name}: total {total} quanta, ledger expects {}", ledger.expected_total());
    assert_eq!(total, ledger.expected_total(), "{name}: the ledger identity broke");
}

fn assert_physical(sim: &mut Simulation, name: &str) {
    let state = sim.read_state().unwrap();
    assert!(state.depth.iter().all(|&d| d >= 0), "{name}: negative depth");
    assert!(state.flow.iter().flatten().all(|f| f.is_finite()), "{name}: a pipe is not finite");
}

/// A body that moves only up and down under gravity and the water's force.
struct Heave {
    body: Body,
    mass: f32,
}

impl Heave {
    fn step(&mut self, force: &BodyForce, dt: f32, gravity: f32) {
        let acceleration = force.force.y / self.mass - gravity;
        self.body.linear_velocity.y += acceleration * dt;
        self.body.position.y += self.body.linear_velocity.y * dt;
    }
}

fn one(forces: Vec<pipewater_core::Result<BodyForce>>) -> BodyForce {
    forces.into_iter().next().unwrap().unwrap()
}

/// Archimedes: a 10 t box released at the surface of a closed 100 m² pool settles with 10 m³
/// displaced and the level 0.10 m higher (within 2 %); lifted out, the level returns.
#[test]
fn a_settled_body_raises_the_level_by_its_displaced_volume_and_lifting_it_returns_it() {
    let dt = 1.0 / 60.0;
    let mut sim = Simulation::cpu(pool(40, 40, 0.25, 3.0), Params::default()).unwrap();
    let g = sim.params().gravity;
    let start = level_away_from(&mut sim, 0.0, 0.0, 0.0);
    let hull = HullShape::Box { half_extents: Vec3::new(2.0, 1.0, 2.0) };
    let mut heave = Heave { body: Body { drag: 2.0, ..Body::new(Vec3::new(0.0, 4.0, 0.0), hull) }, mass: 10_000.0 };
    let mut force = BodyForce::default();
    let mut heights = Vec::new();
    // The pool's water keeps sloshing long after the body rests (little damping, closed walls):
    // the level is the mean surface outside the hull averaged over the last 20 s.
    let mut levels = Vec::new();
    for frame in 0..4800 {
        force = one(sim.couple_bodies(std::slice::from_ref(&heave.body), dt, DENSITY).unwrap());
        heave.step(&force, dt, g);
        sim.advance(dt).unwrap();
        if frame % 600 == 0 {
            heights.push(heave.body.position.y);
        }
        if frame >= 3600 {
            levels.push(level_away_from(&mut sim, 0.0, 0.0, 3.0));
        }
    }
    let level = levels.iter().sum::<f64>() / levels.len() as f64;
    let rise = level - start;
    let volume = force.displaced_volume as f64;
    println!(
        "box 4 x 4 x 2 m, 10 t, in 100 m² of 3 m water: body centre every 10 s {heights:?}; settled at {:.4} m moving {:.2e} m/s; \
         displaced {volume:.4} m³ (expected 10), level {start:.4} -> {level:.4} m (mean over the last 20 s), rise {rise:.4} m (expected 0.1000)",
        heave.body.position.y, heave.body.linear_velocity.y
    );
    assert!((volume - 10.0).abs() <= 0.2, "displaced volume {volume} m³ is not within 2 % of 10 m³");
    assert!((rise - 0.1).abs() <= 0.002, "level rise {rise} m is not within 2 % of 0.1 m");
    assert!(heave.body.linear_velocity.y.abs() < 0.01, "the body has not come to rest");
    assert_ledger_exact(&mut sim, "archimedes");

    heave.body.position.y = 20.0;
    for _ in 0..1800 {
        sim.couple_bodies(std::slice::from_ref(&heave.body), dt, DENSITY).unwrap();
        sim.advance(dt).unwrap();
    }
    let back = level_away_from(&mut sim, 0.0, 0.0, 0.0);
    println!("lifted out: level {back:.5} m (started at {start:.5} m)");
    assert!((back - start).abs() < 5.0e-4, "the level did not return: {back} vs {start}");
    assert_ledger_exact(&mut sim, "archimedes, lifted out");
}

/// A body pushed into still water and released bobs, sends waves out and comes to rest: its
/// vertical motion decays.
#[test]
fn a_body_pushed_under_and_released_bobs_and_comes_to_rest() {
    let dt = 1.0 / 60.0;
    let mut sim = Simulation::cpu(pool(96, 96, 0.25, 2.0), Params::default()).unwrap();
    let g = sim.params().gravity;
    let hull = HullShape::Sphere { radius: 1.0 };
    // Floats with half its volume under: 2/3·π m³·1000 kg/m³ ≈ 2094 kg; start 0.4 m deeper.
    let mass = 0.5 * 4.0 / 3.0 * std::f32::consts::PI * DENSITY;
    let mut heave = Heave { body: Body::new(Vec3::new(0.0, 1.6, 0.0), hull), mass };
    let mut swings = [0.0f32; 4];
    for frame in 0..2400 {
        let force = one(sim.couple_bodies(std::slice::from_ref(&heave.body), dt, DENSITY).unwrap());
        heave.step(&force, dt, g);
        sim.advance(dt).unwrap();
        let window = frame / 600;
        swings[window] = swings[window].max((heave.body.position.y - 2.0).abs());
    }
    let outside = level_away_from(&mut sim, 0.0, 0.0, 3.0);
    println!(
        "sphere r 1 m, half its volume's mass, pushed 0.4 m under: largest |centre − 2 m| per 10 s {swings:?}; rests at {:.4} m, level {outside:.4} m",
        heave.body.position.y
    );
    // What is left after 30 s is the body riding the closed pool's own sloshing, which the
    // bobbing set off and the walls reflect.
    assert!(swings[1] < 0.5 * swings[0] && swings[3] < 0.2 * swings[0], "the bobbing does not decay: {swings:?}");
    assert_ledger_exact(&mut sim, "bobbing");
    assert_physical(&mut sim, "bobbing");
}

/// Surface elevation over the undisturbed level along a line of cells.
fn elevation(sim: &mut Simulation, level: f32) -> (Grid, Vec<f32>) {
    let s = sim.snapshot().unwrap();
    (s.grid, s.height.iter().map(|h| h[0] - level).collect())
}

/// Tows a sphere of radius 1.5 m drawing 0.15 m across 1 m of still water at `speed` along +x,
/// from x = −60 m, for `seconds`; returns the simulation and where the hull is.
fn tow(speed: f32, seconds: f32) -> (Simulation, f32) {
    let dt = 1.0 / 30.0;
    let mut sim = Simulation::cpu(pool(320, 200, 0.5, 1.0), Params::default()).unwrap();
    let mut body = Body::new(Vec3::new(-60.0, 1.0 + 1.5 - 0.15, 0.0), HullShape::Sphere { radius: 1.5 });
    body.linear_velocity = Vec3::new(speed, 0.0, 0.0);
    let frames = (seconds / dt) as u32;
    for _ in 0..frames {
        sim.couple_bodies(std::slice::from_ref(&body), dt, DENSITY).unwrap();
        sim.advance(dt).unwrap();
        body.position.x += speed * dt;
    }
    assert_ledger_exact(&mut sim, "tow");
    assert_physical(&mut sim, "tow");
    (sim, body.position.x)
}

/// A hull faster than √(g·h) leaves a V whose half-angle follows sin θ = √(g·h)/U: measured from
/// the outermost disturbance (|η| above 5 % of the largest) along cross-sections behind it.
#[test]
fn a_fast_hull_leaves_a_v_whose_half_angle_follows_the_wave_speed() {
    let c = (9.81f32 * 1.0).sqrt();
    for mach in [2.0f32, 3.0] {
        let speed = mach * c;
        let (mut sim, hull_x) = tow(speed, 100.0 / speed);
        let (g, eta) = elevation(&mut sim, 1.0);
        let largest = eta.iter().fold(0.0f32, |m, e| m.max(e.abs()));
        let threshold = 0.05 * largest;
        // Cross-sections 10 … 40 m behind the hull; the V's arm is where |η| last exceeds the
        // threshold going outward (both sides averaged).
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for back in (0..=30).map(|k| 10.0 + k as f32) {
            let (cx, _) = g.cell_at(hull_x - back, 0.0).unwrap();
            let mut arms = Vec::new();
            for side in [-1i32, 1] {
                let centre = g.height as i32 / 2;
                let mut outer = None;
                for k in 0..(g.height as i32 / 2) {
                    let cy = centre + side * k;
                    if cy < 0 || cy >= g.height as i32 {
                        break;
                    }
                    if eta[g.index(cx, cy as u32)].abs() > threshold {
                        outer = Some(k as f32 * g.cell_size);
                    }
                }
                if let Some(o) = outer {
                    arms.push(o);
                }
            }
            if arms.len() == 2 {
                xs.push(back);
                ys.push(0.5 * (arms[0] + arms[1]));
            }
        }
        let n = xs.len() as f32;
        let (mx, my) = (xs.iter().sum::<f32>() / n, ys.iter().sum::<f32>() / n);
        let slope = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f32>() / xs.iter().map(|x| (x - mx).powi(2)).sum::<f32>();
        let measured = slope.atan().to_degrees();
        let expected = (1.0 / mach).asin().to_degrees();
        println!(
            "U = {mach} √(gh) = {speed:.2} m/s: V half-angle {measured:.1}° from {} sections (expected {expected:.1}°, {:+.1} %); largest |η| {largest:.4} m",
            xs.len(),
            100.0 * (measured / expected - 1.0)
        );
        assert!(xs.len() >= 20, "the V was found on only {} sections", xs.len());
        assert!((measured / expected - 1.0).abs() <= 0.10, "half-angle {measured}° is not within 10 % of {expected}°");
    }
}

/// A hull at speed leaves its wake behind: the disturbance over a patch behind it is far larger
/// than over the same patch ahead, and its bow wave stands behind it as crests above the level.
#[test]
fn a_moving_hull_leaves_a_wake_behind_and_a_bow_wave_ahead() {
    let c = 9.81f32.sqrt();
    let speed = 1.5 * c;
    let (mut sim, hull_x) = tow(speed, 60.0 / speed);
    let (g, eta) = elevation(&mut sim, 1.0);
    let rms = |x0: f32, x1: f32| {
        let (mut sum, mut n) = (0.0f64, 0u32);
        for y in 0..g.height {
            for x in 0..g.width {
                let [px, pz] = g.cell_centre(x, y);
                if px >= x0 && px < x1 && pz.abs() < 10.0 {
                    sum += (eta[g.index(x, y)] as f64).powi(2);
                    n += 1;
                }
            }
        }
        (sum / n as f64).sqrt()
    };
    let behind = rms(hull_x - 25.0, hull_x - 5.0);
    let ahead = rms(hull_x + 5.0, hull_x + 25.0);
    let at = |x: f32| {
        let (cx, cy) = g.cell_at(x, 0.0).unwrap();
        eta[g.index(cx, cy)]
    };
    let crest = (0..g.width).flat_map(|x| (0..g.height).map(move |y| (x, y))).filter(|&(x, y)| g.cell_centre(x, y)[0] < hull_x).map(|(x, y)| eta[g.index(x, y)]).fold(0.0f32, f32::max);
    let (beside, ahead_of_bow) = (at(hull_x), at(hull_x + 3.0));
    println!(
        "U = 1.5 √(gh): rms η behind {behind:.5} m, ahead {ahead:.5} m; highest crest behind +{crest:.4} m; η beside the hull's centre {beside:+.4} m, 3 m ahead {ahead_of_bow:+.5} m"
    );
    assert!(behind > 5.0 * ahead, "no wake behind the hull: {behind} vs {ahead}");
    assert!(crest > 0.02 && ahead_of_bow.abs() < 0.1 * crest, "no bow wave behind a supercritical hull, or water moved ahead of it");
}

/// Fifty bodies moving every which way over rough terrain for 1000 frames, some leaving the grid
/// and coming back: the ledger identity holds exactly, no depth goes negative, nothing is NaN.
#[test]
fn fifty_moving_bodies_keep_the_mass_ledger_exact() {
    let grid = Grid::new(64, 64, 1.0).unwrap();
    let state = scenarios::rough_lake(grid, 11, 2.0, 1.2);
    let mut sim = Simulation::cpu(state, Params::default()).unwrap();
    let mut rng = scenarios::SplitMix64::new(5);
    let shapes = [HullShape::Sphere { radius: 1.2 }, HullShape::Box { half_extents: Vec3::new(1.5, 0.5, 0.8) }, HullShape::Capsule { radius: 0.6, height: 3.0 }];
    let mut bodies: Vec<Body> = (0..50)
        .map(|k| {
            let mut b = Body::new(Vec3::new(rng.range(-30.0, 30.0), rng.range(0.5, 1.5), rng.range(-30.0, 30.0)), shapes[k % 3]);
            b.linear_velocity = Vec3::new(rng.range(-4.0, 4.0), rng.range(-0.5, 0.5), rng.range(-4.0, 4.0));
            b.angular_velocity = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
            b
        })
        .collect();
    let dt = 1.0 / 30.0;
    let mut volumes = 0.0f64;
    for frame in 0..1000 {
        let forces = sim.couple_bodies(&bodies, dt, DENSITY).unwrap();
        volumes += forces.iter().map(|f| f.as_ref().unwrap().displaced_volume as f64).sum::<f64>();
        for b in &mut bodies {
            b.position += b.linear_velocity * dt;
            b.rotation = (pipewater_core::glam::Quat::from_scaled_axis(b.angular_velocity * dt) * b.rotation).normalize();
            // Bounce off a box larger than the grid, so bodies leave it and come back.
            for axis in [0, 2] {
                if b.position[axis].abs() > 40.0 {
                    b.linear_velocity[axis] = -b.linear_velocity[axis];
                }
            }
            if !(0.0..=2.0).contains(&b.position.y) {
                b.linear_velocity.y = -b.linear_velocity.y;
            }
        }
        sim.advance(dt).unwrap();
        if frame % 250 == 249 {
            assert_physical(&mut sim, "fifty bodies");
            assert_ledger_exact(&mut sim, &format!("fifty bodies, frame {}", frame + 1));
        }
    }
    println!("fifty bodies: {:.1} m³ displaced per frame on average", volumes / 1000.0);
    assert!(volumes > 0.0, "the bodies never touched the water");
}

/// `push_water` drags water the way it is told and moves no water.
#[test]
fn a_push_moves_momentum_not_water() {
    let mut sim = Simulation::cpu(pool(64, 64, 0.5, 1.0), Params::default()).unwrap();
    let before = sim.read_state().unwrap().total_quanta();
    sim.push_water(0.0, 0.0, [3.0, -1.0], 4.0).unwrap();
    sim.advance(1.0 / 30.0).unwrap();
    let v = sim.flow_velocity(0.0, 0.0).unwrap();
    let after = sim.read_state().unwrap().total_quanta();
    println!("pushed towards (3, −1) m/s over 4 m: velocity at the centre ({:.3}, {:.3}) m/s; total {before} -> {after} quanta", v[0], v[1]);
    assert!(v[0] > 1.0 && v[1] < -0.2, "the push did not move the water that way");
    assert_eq!(before, after);
    assert_ledger_exact(&mut sim, "push");
}

/// Bad input: a bad body is refused by name and the others still couple; bodies off the grid or
/// above the water do nothing; bad pushes and densities are refused; nothing becomes NaN.
#[test]
fn bad_bodies_and_pushes_are_refused_and_leave_the_water_safe() {
    let mut sim = Simulation::cpu(pool(32, 32, 1.0, 1.0), Params::default()).unwrap();
    let good = Body::new(Vec3::new(0.0, 1.0, 0.0), HullShape::Sphere { radius: 2.0 });
    let bodies = vec![
        Body { linear_velocity: Vec3::new(f32::NAN, 0.0, 0.0), ..good.clone() },
        Body::new(Vec3::new(0.0, 1.0, 0.0), HullShape::Box { half_extents: Vec3::new(0.0, 1.0, 1.0) }),
        Body::new(Vec3::new(-1.0, 1.0, 0.0), HullShape::Sphere { radius: -3.0 }),
        Body::new(Vec3::new(5000.0, 1.0, 0.0), HullShape::Sphere { radius: 2.0 }),
        Body::new(Vec3::new(0.0, 50.0, 0.0), HullShape::Sphere { radius: 2.0 }),
        good.clone(),
    ];
    let forces = sim.couple_bodies(&bodies, 1.0 / 60.0, DENSITY).unwrap();
    for (k, f) in forces.iter().enumerate() {
        println!("body {k}: {f:?}");
    }
    assert!(forces[0].as_ref().unwrap_err().to_string().contains("linear velocity"));
    assert!(forces[1].as_ref().unwrap_err().to_string().contains("box half extent x"));
    assert!(forces[2].as_ref().unwrap_err().to_string().contains("sphere radius"));
    assert_eq!(forces[3].as_ref().unwrap().displaced_volume, 0.0, "a body off the grid displaces nothing");
    assert_eq!(forces[4].as_ref().unwrap().displaced_volume, 0.0, "a body above the water displaces nothing");
    assert!(forces[5].as_ref().unwrap().displaced_volume > 1.0, "the good body still couples");
    for bad in [sim.push_water(f32::NAN, 0.0, [1.0, 0.0], 1.0), sim.push_water(0.0, 0.0, [f32::INFINITY, 0.0], 1.0), sim.push_water(0.0, 0.0, [1.0, 0.0], -1.0)] {
        println!("bad push: {}", bad.as_ref().unwrap_err());
        assert!(bad.is_err());
    }
    for bad in [sim.couple_bodies(&[good.clone()], 1.0 / 60.0, 0.0), sim.couple_bodies(&[good.clone()], f32::NAN, DENSITY)] {
        println!("bad coupling: {}", bad.as_ref().unwrap_err());
        assert!(bad.is_err());
    }
    for _ in 0..60 {
        sim.advance(1.0 / 60.0).unwrap();
    }
    assert_physical(&mut sim, "bad input");
    assert_ledger_exact(&mut sim, "bad input");
}

/// The coupling is a pure function of the snapshot: the same bodies over the same water give the
/// same displacement, nudges and forces (what lets the GPU test feed both backends one coupling).
#[test]
fn coupling_is_a_pure_function_of_the_water_and_the_bodies() {
    let mut sim = Simulation::cpu(pool(48, 48, 0.5, 1.0), Params::default()).unwrap();
    let mut body = Body::new(Vec3::new(1.0, 1.0, -2.0), HullShape::Capsule { radius: 0.7, height: 4.0 });
    body.linear_velocity = Vec3::new(1.0, 0.0, 0.5);
    let s = sim.snapshot().unwrap();
    let a = couple(&s, std::slice::from_ref(&body), 1.0 / 60.0, DENSITY, 9.81);
    let b = couple(&s, std::slice::from_ref(&body), 1.0 / 60.0, DENSITY, 9.81);
    println!("{} displaced cells, {} nudged cells, force {:?}", a.displacement.len(), a.nudges.len(), a.forces[0]);
    assert_eq!(a.displacement, b.displacement);
    assert_eq!(a.nudges, b.nudges);
    assert!(!a.displacement.is_empty() && !a.nudges.is_empty());
}
