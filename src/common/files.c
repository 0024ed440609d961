/* Small file and hashing helpers (files.h). */
#include "common/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t hlb__fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

int hlb__mkdir_p(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int bad = mkdir(path, 0755) != 0 && errno != EEXIST;
    *p = '/';
    if (bad) return -1;
  }
  return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int hlb__replace_file(const char *path, const void *data, size_t n) {
  size_t len = strlen(path) + 8;
  char *tmp = malloc(len);
  if (!tmp) {
    errno = ENOMEM;
    return -1;
  }
  snprintf(tmp, len, "%s.XXXXXX", path);
  int fd = mkstemp(tmp), rc = 0;
  if (fd < 0) {
    rc = -1;
  } else {
    const char *p = data;
    size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd, p + done, n - done);
      if (w <= 0) break;
      done += (size_t)w;
    }
    fchmod(fd, 0644);
    int closed = close(fd);
    if (closed != 0 || done != n || rename(tmp, path) != 0) {
      int saved = errno ? errno : EIO;
      unlink(tmp);
      errno = saved;
      rc = -1;
    }
  }
  free(tmp);
  return rc;
}
