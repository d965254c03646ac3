/* Log the C allocator calls of 64 KiB or more (scripts/held_constants.py --trace builds and
 * preloads this): one line per call, "A|F address bytes mmapped alignment", alignment 0 for
 * malloc/realloc/calloc, 1064 for aligned_alloc(64), 64 for posix_memalign(64), 2064 for
 * memalign(64). Lines "M ..." come from the traced program itself (markers). The file is
 * $HELD_TRACE_FILE. Only the calls' sizes and order are read by graphmem's scripts: the rules of
 * graphmem/ort/held/loading.py were derived from such traces. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_realloc)(void *, size_t);
static void *(*r_calloc)(size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_memalign)(size_t, size_t);
static int fd = -1;
static __thread int busy = 0;
#define LARGE (64 * 1024)
#define SLOTS (1 << 20)
static uintptr_t keys[SLOTS];
static size_t sizes[SLOTS];
static char boot[65536]; /* calloc before dlsym resolves it */
static size_t boot_used;

static void init(void) {
  if (r_malloc) return;
  r_malloc = dlsym(RTLD_NEXT, "malloc");
  r_free = dlsym(RTLD_NEXT, "free");
  r_realloc = dlsym(RTLD_NEXT, "realloc");
  r_calloc = dlsym(RTLD_NEXT, "calloc");
  r_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  r_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  r_memalign = dlsym(RTLD_NEXT, "memalign");
}

static void emit(char kind, void *p, size_t n, int align) {
  if (fd < 0) {
    const char *f = getenv("HELD_TRACE_FILE");
    if (!f || (fd = open(f, O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0) return;
  }
  char line[96];
  size_t header = ((size_t *)p)[-1];
  int len = snprintf(line, sizeof line, "%c %lx %zu %d %d\n", kind, (unsigned long)p, n, (int)((header >> 1) & 1), align);
  if (write(fd, line, len) < 0) fd = -2;
}

static void track(void *p, size_t n, int align) {
  if (!p || n < LARGE || busy) return;
  busy = 1;
  uintptr_t k = (uintptr_t)p;
  size_t i = (k >> 4) & (SLOTS - 1);
  while (keys[i] && keys[i] != k) i = (i + 1) & (SLOTS - 1);
  keys[i] = k;
  sizes[i] = n;
  emit('A', p, n, align);
  busy = 0;
}

static void untrack(void *p) {
  if (!p || busy) return;
  busy = 1;
  uintptr_t k = (uintptr_t)p;
  for (size_t i = (k >> 4) & (SLOTS - 1); keys[i]; i = (i + 1) & (SLOTS - 1)) {
    if (keys[i] == k) {
      emit('F', p, sizes[i], 0);
      keys[i] = 1; /* a tombstone keeps later probes going */
      break;
    }
  }
  busy = 0;
}

void *malloc(size_t n) { init(); void *p = r_malloc(n); track(p, n, 0); return p; }
void *calloc(size_t a, size_t b) {
  if (!r_calloc) { void *p = boot + boot_used; boot_used += (a * b + 15) & ~(size_t)15; return p; }
  void *p = r_calloc(a, b); track(p, a * b, 0); return p;
}
void free(void *p) {
  if ((char *)p >= boot && (char *)p < boot + sizeof boot) return;
  init(); untrack(p); r_free(p);
}
void *realloc(void *q, size_t n) { init(); untrack(q); void *p = r_realloc(q, n); track(p, n, 0); return p; }
int posix_memalign(void **pp, size_t a, size_t n) { init(); int r = r_posix_memalign(pp, a, n); if (!r) track(*pp, n, (int)a); return r; }
void *aligned_alloc(size_t a, size_t n) { init(); void *p = r_aligned_alloc(a, n); track(p, n, 1000 + (int)a); return p; }
void *memalign(size_t a, size_t n) { init(); void *p = r_memalign(a, n); track(p, n, 2000 + (int)a); return p; }
