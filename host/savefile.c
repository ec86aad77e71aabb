/*
** savefile.c: where and how luagpu's writers (a:save, gpu.write_file and
** gpu.show, trace files) write a file whole. lg_save_open follows the
** path's symbolic links as open(2) would (dangling ones too; a link in a
** sticky world-writable folder only as fs.protected_symlinks allows),
** then: a regular file (or a new one) is written to a temporary file
** beside it, of the old file's mode, owner and group, renamed over it by
** lg_save_close, so a failed write leaves the old file whole; anything
** else (a device, a FIFO, /dev/stdout and the like) is written in place,
** as a plain write would. So is a regular file whose temporary file cannot
** be made (a folder its user may not write) or could not take the old
** file's owner: the file stays the one it was. While a temporary file
** exists, SIGTERM, SIGHUP and SIGINT (those left at their default action)
** remove it before the process dies.
*/
#define _XOPEN_SOURCE 700   /* lstat, readlink, mkstemp, fchown, sigaction */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "internal.h"

static const char *const protected_link =
  "refusing to follow a symbolic link in a sticky world-writable directory owned by "
  "another user";

/* ------------------------------------------------- the temporary file */

/* The temporary file that the signals below remove: one at a time (a
** second one, another thread's, is not covered), its path in a static
** buffer, since the handler may only call async-signal-safe functions. */
static const int fatal[3] = {SIGTERM, SIGHUP, SIGINT};
static struct sigaction before[3];
static int caught[3];
static char armed_path[PATH_MAX + 32];
static volatile sig_atomic_t armed;
static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;   /* held while armed */

/* Removes the temporary file, puts back the default action and raises the
** signal again: the process dies of it as it would have. */
static void on_fatal(int sig) {
  int i;
  if (armed) unlink(armed_path);
  armed = 0;
  for (i = 0; i < 3; i++)
    if (fatal[i] == sig) sigaction(sig, &before[i], NULL);
  raise(sig);                 /* delivered once this handler returns */
}

/* Blocks (or unblocks) the fatal signals around what must not be cut in
** two: making the temporary file and noting it, renaming it and forgetting it. */
static void block_fatal(int block, sigset_t *old) {
  sigset_t set;
  int i;
  if (!block) {
    pthread_sigmask(SIG_SETMASK, old, NULL);
    return;
  }
  sigemptyset(&set);
  for (i = 0; i < 3; i++) sigaddset(&set, fatal[i]);
  pthread_sigmask(SIG_BLOCK, &set, old);
}

/* Notes tmp for on_fatal, and catches each fatal signal left at its
** default action (one that the program handles itself, such as the luagpu
** program's Ctrl-C while Lua runs, or ignores, is left alone). */
static void arm(const char *tmp) {
  struct sigaction sa;
  int i;
  if (strlen(tmp) >= sizeof armed_path || pthread_mutex_trylock(&arm_lock) != 0) return;
  strcpy(armed_path, tmp);
  armed = 1;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  for (i = 0; i < 3; i++) {
    caught[i] = sigaction(fatal[i], NULL, &before[i]) == 0 &&
                !(before[i].sa_flags & SA_SIGINFO) && before[i].sa_handler == SIG_DFL &&
                sigaction(fatal[i], &sa, NULL) == 0;
  }
}

/* Undoes arm of tmp (a file another thread's arm noted is not tmp). */
static void disarm(const char *tmp) {
  struct sigaction now;
  int i;
  if (!armed || strcmp(tmp, armed_path) != 0) return;
  armed = 0;
  for (i = 0; i < 3; i++) {   /* unless the program has set its own since */
    if (caught[i] && sigaction(fatal[i], NULL, &now) == 0 && now.sa_handler == on_fatal)
      sigaction(fatal[i], &before[i], NULL);
    caught[i] = 0;
  }
  pthread_mutex_unlock(&arm_lock);
}

/* A new temporary file beside target: its path (malloc'd) and descriptor
** in s, or 0 with errno set. The name is short ("DIR/.luagpu-XXXXXX"), so
** a target of a legal long name still gets one. */
static int temp_beside(lg_SaveFile *s) {
  const char *slash = strrchr(s->target, '/');
  size_t dir = slash != NULL ? (size_t)(slash - s->target) + 1 : 0;
  sigset_t old;
  int err;
  if ((s->tmp = malloc(dir + 32)) == NULL) {
    errno = ENOMEM;
    return 0;
  }
  memcpy(s->tmp, s->target, dir);
  strcpy(s->tmp + dir, ".luagpu-XXXXXX");
  block_fatal(1, &old);
  if ((s->fd = mkstemp(s->tmp)) >= 0) arm(s->tmp);
  err = errno;
  block_fatal(0, &old);
  if (s->fd < 0) {
    free(s->tmp);
    s->tmp = NULL;
    errno = err;
    return 0;
  }
  return 1;
}

/* Removes the temporary file (its descriptor closed) and forgets it. */
static void drop_temp(lg_SaveFile *s) {
  sigset_t old;
  block_fatal(1, &old);
  unlink(s->tmp);
  disarm(s->tmp);
  block_fatal(0, &old);
  free(s->tmp);
  s->tmp = NULL;
}

/* ------------------------------------------------------ following links */

/* Whether p names an open file of a process rather than a file: a
** /proc/PID/fd/N or /dev/fd/N "magic link" (its target, "pipe:[N]" or a
** file's path, is no path to write through), or /dev/stdout and the like. */
static int is_fd_link(const char *p) {
  return strcmp(p, "/dev/stdout") == 0 || strcmp(p, "/dev/stderr") == 0 ||
         strcmp(p, "/dev/stdin") == 0 || strncmp(p, "/dev/fd/", 8) == 0 ||
         (strncmp(p, "/proc/", 6) == 0 && strstr(p + 6, "/fd/") != NULL);
}

/* Whether the kernel's fs.protected_symlinks rule lets the link p (lstat
** in link) be followed: in a sticky world-writable folder (/tmp) only a
** link of the follower's or of the folder's owner is. */
static int may_follow(const char *p, const struct stat *link) {
  const char *slash = strrchr(p, '/');
  struct stat dir;
  char *d;
  int ok;
  if (link->st_uid == geteuid()) return 1;
  if (slash == NULL) return stat(".", &dir) != 0 || !(dir.st_mode & S_ISVTX) ||
                            !(dir.st_mode & S_IWOTH) || dir.st_uid == link->st_uid;
  if ((d = malloc((size_t)(slash - p) + 2)) == NULL) return 1;
  memcpy(d, p, (size_t)(slash - p) + 1);
  d[slash == p ? 1 : slash - p] = '\0';
  ok = stat(d, &dir) != 0 || !(dir.st_mode & S_ISVTX) || !(dir.st_mode & S_IWOTH) ||
       dir.st_uid == link->st_uid;
  free(d);
  return ok;
}

/* The file a write to path reaches: path with its chain of symbolic links
** followed, also to a name that does not exist yet (a dangling link is
** written through, as open(2) would, never replaced). The chain stops at
** a /proc/PID/fd/N link (*stream set): open(2) alone can follow that one.
** Returns a malloc'd path, or NULL with errno set (ELOOP for a chain of 40
** links or more; EACCES and *why for a link fs.protected_symlinks refuses). */
static char *follow_links(const char *path, int *stream, const char **why) {
  char *p = malloc(strlen(path) + 1), *link, *next, *slash;
  struct stat st;
  ssize_t n;
  int hops;
  *stream = 0;
  if (p == NULL) return NULL;
  strcpy(p, path);
  for (hops = 0; hops < 40; hops++) {
    if (is_fd_link(p)) {
      *stream = 1;
      return p;
    }
    if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (!may_follow(p, &st)) {
      free(p);
      *why = protected_link;
      errno = EACCES;
      return NULL;
    }
    link = malloc((size_t)st.st_size + PATH_MAX + 1);
    n = link != NULL ? readlink(p, link, (size_t)st.st_size + PATH_MAX) : -1;
    if (n < 0) {
      int err = link != NULL ? errno : ENOMEM;
      free(link);
      free(p);
      errno = err;
      return NULL;
    }
    link[n] = '\0';
    slash = strrchr(p, '/');
    if (link[0] == '/' || slash == NULL) {
      next = link;
    } else {             /* relative: from the folder of the link */
      next = malloc((size_t)(slash - p) + 2 + (size_t)n);
      if (next != NULL) {
        memcpy(next, p, (size_t)(slash - p) + 1);
        strcpy(next + (slash - p) + 1, link);
      }
      free(link);
      if (next == NULL) {
        free(p);
        errno = ENOMEM;
        return NULL;
      }
    }
    free(p);
    p = next;
  }
  free(p);
  errno = ELOOP;
  return NULL;
}

int lg_save_is_stream(const char *path) {
  const char *why = NULL;
  int stream;
  char *p = follow_links(path, &stream, &why);
  free(p);
  return p != NULL && stream;
}

/* ------------------------------------------------------------ writing */

/* Opens s->target itself, as a plain write would (O_TRUNC, as Python's
** open(path, "wb") does). */
static int open_in_place(lg_SaveFile *s, int flags) {
  int nowait = (flags & LG_SAVE_NOWAIT) != 0;
  s->fd = open(s->target, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | (nowait ? O_NONBLOCK : 0),
               0666);
  if (s->fd < 0) return 0;
  if (nowait) fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
  return 1;
}

int lg_save_open(lg_SaveFile *s, const char *path, int flags) {
  struct stat st, own;
  int exists, stream, err;
  mode_t mode;
  s->fd = -1;
  s->tmp = NULL;
  s->why = NULL;
  if ((s->target = follow_links(path, &stream, &s->why)) == NULL) return 0;
  exists = stat(s->target, &st) == 0;
  if (stream || (exists && !S_ISREG(st.st_mode))) {
    if (open_in_place(s, flags)) return 1;
    goto fail;
  }
  /* the rename alone would replace a file its user may not write */
  if (exists && access(s->target, W_OK) != 0) goto fail;     /* EACCES, EROFS */
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    mode = umask(022);
    umask(mode);
    mode = 0666 & ~mode;
  }
  if (!temp_beside(s)) {
    /* a folder its user may not write, a file he may: written in place */
    if (exists && (errno == EACCES || errno == EPERM || errno == EROFS) &&
        open_in_place(s, flags))
      return 1;
    goto fail;
  }
  /* the old file's owner and group (root may give any; a user his groups),
  ** else the old file is written in place and keeps them */
  if (exists && fstat(s->fd, &own) == 0 && (own.st_uid != st.st_uid || own.st_gid != st.st_gid) &&
      fchown(s->fd, st.st_uid, st.st_gid) != 0) {
    close(s->fd);
    drop_temp(s);
    if (open_in_place(s, flags)) return 1;
    goto fail;
  }
  if (fchmod(s->fd, mode) == 0) return 1;   /* after fchown, which clears set-id bits */
  err = errno;
  close(s->fd);
  drop_temp(s);
  errno = err;
fail:
  err = errno;
  free(s->target);
  s->target = NULL;
  s->fd = -1;
  errno = err;
  return 0;
}

int lg_save_write(lg_SaveFile *s, const void *data, size_t len) {
  const char *p = (const char *)data;
  while (len > 0) {
    ssize_t n = write(s->fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return 0;
    }
    p += n;
    len -= (size_t)n;
  }
  return 1;
}

int lg_save_close(lg_SaveFile *s, int ok) {
  int err = ok ? 0 : errno != 0 ? errno : EIO;
  sigset_t old;
  if (s->fd >= 0 && close(s->fd) != 0 && err == 0) err = errno;
  s->fd = -1;
  if (s->tmp != NULL) {
    block_fatal(1, &old);
    if (err == 0 && rename(s->tmp, s->target) != 0) err = errno;
    if (err != 0) unlink(s->tmp);   /* ours: made by mkstemp */
    disarm(s->tmp);
    block_fatal(0, &old);
    free(s->tmp);
    s->tmp = NULL;
  }
  free(s->target);
  s->target = NULL;
  errno = err;
  return err == 0;
}

const char *lg_save_why(const lg_SaveFile *s, int err) {
  return s->why != NULL ? s->why : strerror(err);
}
