fn main() {
    println!("arcane-mcp");
}
