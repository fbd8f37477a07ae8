// Throwaway experiment (not committed): import a file with a given pack level / block size.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let file = &a[1];
    let level: i32 = a[2].parse().unwrap();
    let block: usize = a[3].parse().unwrap();
    let streams: bool = a[4] == "1";
    let id = a.get(5).cloned();
    let dir = format!("/tmp/imp33-{}", std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    let t = std::time::Instant::now();
    let db = stele::Database::open_with(
        &dir,
        stele::DatabaseOptions::default()
            .pack_block_bytes(block)
            .pack_streams(streams),
    )
    .unwrap();
    let mut opts = stele::import::ImportOptions::new();
    if level > 0 {
        opts = opts.pack_level(level);
    }
    if let Some(f) = id {
        opts = opts.id_field(f);
    }
    let r = stele::import::import_path(&db, "c", file, &opts, |_| {}).unwrap();
    db.close().unwrap();
    let el = t.elapsed();
    let mut bytes = 0u64;
    for e in walk(std::path::Path::new(&dir)) {
        bytes += e;
    }
    let mut ru: libc_rusage = unsafe { std::mem::zeroed() };
    unsafe { getrusage(0, &mut ru) };
    let cpu = ru.ut.0 as f64 + ru.ut.1 as f64 / 1e6 + ru.st.0 as f64 + ru.st.1 as f64 / 1e6;
    println!(
        "docs {} level {level} block {block} streams {streams}: {:.2} s wall {:.2} s cpu, {} bytes, maxrss {} MB, streamed {}",
        r.documents,
        el.as_secs_f64(),
        cpu,
        bytes,
        ru.maxrss / 1024,
        r.packed_while_reading
    );
    let _ = std::fs::remove_dir_all(&dir);
}
#[repr(C)]
struct libc_rusage {
    ut: (i64, i64),
    st: (i64, i64),
    maxrss: i64,
    rest: [i64; 13],
}
unsafe extern "C" {
    fn getrusage(who: i32, r: *mut libc_rusage) -> i32;
}
fn walk(p: &std::path::Path) -> Vec<u64> {
    let mut v = vec![];
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        if m.is_dir() {
            v.extend(walk(&e.path()));
        } else {
            v.push(m.len());
        }
    }
    v
}
