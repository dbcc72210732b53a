//! Human-readable byte sizes and the field names that carry them.

/// Formats a byte count with decimal SI units and one decimal.
///
/// ```
/// use arcane_markdown::human_bytes;
/// assert_eq!(human_bytes(1_500_000_000), "1.5 GB");
/// assert_eq!(human_bytes(999), "999 B");
/// assert_eq!(human_bytes(999_960), "1.0 MB");
/// ```
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    // Integer arithmetic: tenths of the unit, rounded half up; a value that
    // rounds to 1000.0 moves on to the next unit.
    let n = u128::from(n);
    let mut unit = 1u128;
    let mut idx = 0;
    loop {
        unit *= 1000;
        idx += 1;
        let tenths = (n * 10 + unit / 2) / unit;
        if tenths < 10_000 || idx == UNITS.len() - 1 {
            return format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[idx]);
        }
    }
}

/// Whether a field of this name holds a byte count (`size`, `sizeRw`, `virtualSize`,
/// `memoryUsage`, `rxBytes`, `mem_limit`, `spaceReclaimed`, Go's memory statistics such as
/// `heapAlloc`…). Case, `_` and `-` do not matter. Counters that merely end in "size"
/// (`pageSize`, `subnetSize`), counts, percentages and ratios are excluded. This crate's tests
/// check this against every numeric field of Arcane's 2.8.0 responses
/// (`tests/render.rs`, `every_byte_count_of_the_2_8_0_responses_gets_units`), so a
/// field Arcane adds is classified rather than missed.
///
/// ```
/// use arcane_markdown::is_byte_field;
/// assert!(is_byte_field("sizeRw"));
/// assert!(is_byte_field("memoryUsage"));
/// assert!(is_byte_field("mem_limit"));
/// assert!(!is_byte_field("pageSize"));
/// assert!(!is_byte_field("memoryPercent"));
/// ```
pub fn is_byte_field(name: &str) -> bool {
    let l: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    /// Names that end in "size" but count something else.
    const NOT_BYTES: [&str; 9] = [
        "pagesize",
        "batchsize",
        "poolsize",
        "fontsize",
        "tabsize",
        "windowsize",
        "stepsize",
        "samplesize",
        // A subnet's prefix length (Swarm's default address pools).
        "subnetsize",
    ];
    /// Go's `runtime.MemStats` byte counters, as Arcane's runtime information names them.
    const GO_MEMORY: [&str; 18] = [
        "alloc",
        "totalalloc",
        "sys",
        "heapalloc",
        "heapsys",
        "heapidle",
        "heapinuse",
        "heapreleased",
        "stackinuse",
        "stacksys",
        "mspaninuse",
        "mspansys",
        "mcacheinuse",
        "mcachesys",
        "buckhashsys",
        "gcsys",
        "othersys",
        "nextgc",
    ];
    if NOT_BYTES.contains(&l.as_str())
        || [
            "percent",
            "pct",
            "ratio",
            "fraction",
            "count",
            "swappiness",
            "tenths",
            "prefix",
        ]
        .iter()
        .any(|w| l.contains(w))
    {
        return false;
    }
    l.ends_with("bytes")
        || l.ends_with("size")
        || l.ends_with("spacereclaimed")
        || l.starts_with("size")
        || l.starts_with("memory")
        || GO_MEMORY.contains(&l.as_str())
        || matches!(
            l.as_str(),
            "memusage"
                | "memlimit"
                | "memtotal"
                | "memused"
                | "memfree"
                | "memreservation"
                | "memswaplimit"
                | "diskusage"
                | "disktotal"
                | "reclaimable"
                | "reclaimablespace"
        )
}
