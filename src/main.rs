//! The sitrep binary: parses the command line and hands over to `cli`.

fn main() {
    println!("sitrep");
}
