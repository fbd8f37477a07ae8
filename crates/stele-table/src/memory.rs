//! Hints to the operating system about memory: what the sorter allocates, and the parts of
//! a mapped table a scan is about to read (Linux only; no-ops elsewhere).

/// Size of a transparent huge page on x86-64 and most arm64 Linux systems.
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks Linux to back the allocation of `v` with transparent huge pages where it can. Call
/// it before the memory is first written: the pages are chosen when they are first touched.
///
/// Why: the sorter reads and writes its arena and its record arrays at random places, and
/// with 4 KiB pages almost every such access also misses the TLB (on this project's VMs a
/// page walk costs about as much as the cache miss itself). With the system's usual
/// `transparent_hugepage=madvise`, memory gets huge pages only when asked. Only the whole
/// 2 MiB-aligned pieces of the allocation can get them.
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE_BYTES {
        return;
    }
    let start = v.as_mut_ptr().cast::<u8>();
    let skip = start.align_offset(PAGE_BYTES);
    let len = bytes.saturating_sub(skip) / PAGE_BYTES * PAGE_BYTES;
    if len == 0 {
        return;
    }
    // SAFETY: the range lies inside `v`'s allocation (from its first whole page, for whole
    // pages), which `v` owns for the duration of the call. MADV_HUGEPAGE changes neither the
    // contents nor the validity of any byte, only how the kernel backs the pages.
    unsafe { advise(start.wrapping_add(skip) as usize, len, MADV_HUGEPAGE) };
}

/// Hands the allocator's free memory back to the system. glibc keeps freed blocks smaller
/// than its mmap threshold (which adapts up to 32 MiB: a sort batch's arena chunks and
/// common prefix lengths are such blocks) resident in its heaps; without this, memory
/// a batch freed stays in the process's RSS while the merge allocates its own buffers
/// (measured: 45 MiB of a 256 MiB budget on 14M pairs). A no-op with other C libraries.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            /// glibc: returns free memory at the top of the heap and whole free pages
            /// inside it to the system; 1 if it released any.
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: `malloc_trim` takes no pointer and touches only memory the allocator
        // holds as free; it takes the allocator's own locks, so it is safe to call from any
        // thread at any time. If a non-glibc global allocator is in use, glibc's heap is
        // merely (nearly) empty and nothing happens.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Asks Linux to start reading the pages of `bytes` into memory (`MADV_WILLNEED`) and
/// returns at once; the reads complete in the background.
///
/// Why: tables are mapped for point reads (`MADV_RANDOM`), which turns off the kernel's
/// read-ahead, so a scan of a cold table would fault one 4 KiB page at a time, each a disk
/// round trip (about 45 MB/s on the project's VM disk). Scans ask for the bytes ahead of
/// them instead; the advice costs one system call and does nothing for pages already in
/// memory (or for tables held in heap memory).
pub(crate) fn will_need(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let addr = bytes.as_ptr() as usize;
    let start = addr / PAGE_BYTES * PAGE_BYTES;
    // SAFETY: `[start, start + len)` covers the pages holding `bytes`, which the caller
    // borrows for the duration of the call, so every one of them is mapped (a mapping is
    // made of whole pages). MADV_WILLNEED changes neither the contents nor the mappings: it
    // only starts reading the pages' backing storage into the page cache.
    unsafe { advise(start, addr + bytes.len() - start, MADV_WILLNEED) };
}

const PAGE_BYTES: usize = 4096;
const MADV_WILLNEED: std::ffi::c_int = 3;
const MADV_HUGEPAGE: std::ffi::c_int = 14;

/// `madvise(start, len, advice)` on Linux, ignoring failures (other page sizes, no THP,
/// an old kernel): every advice given here is only an optimisation. A no-op elsewhere.
///
/// # Safety
///
/// `[start, start + len)` must be pages of memory the caller keeps mapped during the call,
/// and `advice` one that changes neither their contents nor their validity.
unsafe fn advise(start: usize, len: usize, advice: std::ffi::c_int) {
    #[cfg(target_os = "linux")]
    {
        unsafe extern "C" {
            /// POSIX/Linux: advice about the pages of `[addr, addr + len)`.
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        // SAFETY: the caller's contract is madvise's: mapped pages, harmless advice.
        unsafe {
            madvise(start as *mut std::ffi::c_void, len, advice);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len, advice);
}
