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

/// Whether a field of this name holds a byte count (`size`, `sizeRw`,
/// `virtualSize`, `memoryUsage`, `rxBytes`…). Counters that merely end in
/// "size" (`pageSize`, `batchSize`) and percentages are excluded.
///
/// ```
/// use arcane_markdown::is_byte_field;
/// assert!(is_byte_field("sizeRw"));
/// assert!(is_byte_field("memoryUsage"));
/// assert!(!is_byte_field("pageSize"));
/// assert!(!is_byte_field("memoryPercent"));
/// ```
pub fn is_byte_field(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    const NOT_BYTES: [&str; 8] = [
        "pagesize",
        "batchsize",
        "poolsize",
        "fontsize",
        "tabsize",
        "windowsize",
        "stepsize",
        "samplesize",
    ];
    if NOT_BYTES.contains(&l.as_str())
        || ["percent", "pct", "ratio", "count", "swappiness"]
            .iter()
            .any(|w| l.contains(w))
    {
        return false;
    }
    l.ends_with("bytes")
        || l.ends_with("size")
        || l.starts_with("size")
        || l.starts_with("memory")
        || matches!(
            l.as_str(),
            "memusage"
                | "memlimit"
                | "memtotal"
                | "memused"
                | "memfree"
                | "diskusage"
                | "spacereclaimed"
                | "reclaimable"
                | "reclaimablespace"
        )
}
