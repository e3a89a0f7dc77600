//! Links the extension so that the dynamic loader never unmaps it. Godot unloads a GDExtension
//! with `dlclose` when it exits, while the worker threads of the thread pool (rayon's global
//! pool, which lives as long as the process) still sleep inside the library's code; a worker
//! that wakes after the unload runs unmapped memory and Godot crashes on its way out (seen on
//! Linux under load, a few exits in twenty). With `-z nodelete` the library stays mapped until
//! the process ends. The price: on Linux a rebuilt library is not hot-reloaded by the editor
//! (Godot reopens the same path, which the loader still holds).
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(os.as_str(), "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}
