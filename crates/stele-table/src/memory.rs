//! Hints to the operating system about memory the sorter allocates (Linux only; no-ops
//! elsewhere).

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
    #[cfg(target_os = "linux")]
    {
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        const PAGE_BYTES: usize = 4096;
        unsafe extern "C" {
            /// POSIX/Linux: advice about the pages of `[addr, addr + len)`.
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        let start = v.as_mut_ptr().cast::<u8>();
        let skip = start.align_offset(PAGE_BYTES);
        let len = bytes.saturating_sub(skip) / PAGE_BYTES * PAGE_BYTES;
        if len == 0 {
            return;
        }
        // SAFETY: the range lies inside `v`'s allocation (from its first whole page, for
        // whole pages), which `v` owns for the duration of the call. MADV_HUGEPAGE changes
        // neither the contents nor the validity of any byte, only how the kernel backs the
        // pages; on failure (no THP support, other page size) it returns an error that is
        // ignored, since the advice is only an optimisation.
        unsafe {
            madvise(start.wrapping_add(skip).cast(), len, MADV_HUGEPAGE);
        }
    }
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
