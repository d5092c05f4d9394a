//! Prints the measured cache hierarchy (the pointer-chase curve and the probe
//! references) as JSON: `cargo run --release -p blockmem-lab --example hierarchy`.

fn main() {
    let t = blockmem_lab::lab::timer::Timer::calibrate(std::time::Duration::from_millis(30));
    let h = blockmem_lab::lab::state::Hierarchy::measure(&t, None);
    println!(
        "{}",
        serde_json::to_string_pretty(&h).expect("serialisable")
    );
}
