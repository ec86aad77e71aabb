/*
** includes.c: the files a program source includes, found and hashed for
** the program cache's key (lg_hash_includes), the way the compiler finds
** them.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* The key must change whenever a file the compiler reads changes. The scan
** reads each file as the compiler's first phases do (trigraphs aside:
** backslash-newlines spliced, comments blanked, literals kept whole), then
** follows every #include "..." / <...> and __has_include operand through
** the compiler's search order, noting an include that is not a regular
** file (a FIFO would block the compiler: the build is refused). What it cannot follow for sure (an #include
** of a macro, #include_next, trigraphs, digraph directives, a directive
** after a comment that spans lines, too many or too deep files) makes it
** unsure, and program.c then does not cache the build. */

#define MAX_INCLUDES 256
#define MAX_DEPTH 32
#define LG_STR_(x) #x
#define LG_STR(x) LG_STR_(x)
#define MAX_DEFINES 64

typedef struct Scan {
  lg_Hash *h;
  const char *const *dirs;     /* the compiler's -I folders, in its order */
  int ndirs;
  char *seen[MAX_INCLUDES];    /* real paths of the files hashed so far */
  int nseen;
  int unsure;                  /* met something it cannot follow */
  char *bad;                   /* the first include that is not a file, or "" */
  size_t badsize;
  /* the object-like macros defined as a file name ("x.h" or <x.h>): NAME
  ** then its operand, one malloc'd string "NAME\0operand"; a NAME defined
  ** twice (#ifdef branches) is marked twice and followed by none */
  char *defs[MAX_DEFINES];
  int ndefs;
} Scan;

/* Reads a whole regular file (malloc'd, NUL-terminated); NULL when it
** cannot. Opened without blocking: a FIFO put there meanwhile is refused. */
static char *read_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  FILE *f;
  char *p = NULL;
  long n;
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (f = fdopen(fd, "rb")) == NULL) {
    close(fd);
    return NULL;
  }
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (p = malloc((size_t)n + 1)) != NULL) {
    *len = fread(p, 1, (size_t)n, f);
    p[*len] = '\0';
  }
  fclose(f);
  return p;
}

/* True when path is a regular file. Something else that is not a folder
** (a FIFO, a device) the compiler would open and read, and a FIFO blocks
** it forever: the first such is noted in s->bad, for the build to refuse. */
static int is_file(Scan *s, const char *name, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || S_ISDIR(st.st_mode)) return 0;
  if (!S_ISREG(st.st_mode) && s->bad[0] == '\0')
    snprintf(s->bad, s->badsize, "the include \"%s\" finds %s, which is not a file", name, path);
  return S_ISREG(st.st_mode);
}

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

static int is_ident(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Removes each backslash-newline in place (clang also takes blanks between
** the backslash and the newline); returns the new length. */
static size_t splice(char *t, size_t n) {
  size_t r = 0, w = 0;
  while (r < n) {
    if (t[r] == '\\') {
      size_t e = r + 1;
      while (e < n && is_blank(t[e])) e++;
      if (e < n && t[e] == '\n') { r = e + 1; continue; }
    }
    t[w++] = t[r++];
  }
  return w;
}

/* Copies the string or character literal at t[*r] to t[*w] (in place),
** up to its closing quote or the end of the line. */
static void copy_literal(char *t, size_t n, size_t *r, size_t *w) {
  char q = t[*r];
  t[(*w)++] = t[(*r)++];
  while (*r < n && t[*r] != q && t[*r] != '\n') {
    if (t[*r] == '\\' && *r + 1 < n && t[*r + 1] != '\n') t[(*w)++] = t[(*r)++];
    t[(*w)++] = t[(*r)++];
  }
  if (*r < n && t[*r] == q) t[(*w)++] = t[(*r)++];
}

/* Blanks the comments of t in place, keeping literals whole: a comment
** becomes one space, or a newline when it holds one and is not inside a
** directive (a directive goes on after it, as in clang). A '#' that follows
** such a comment, or a "%:" directive, makes the scan unsure. Returns the
** new length. */
static size_t uncomment(Scan *s, char *t, size_t n) {
  size_t r = 0, w = 0;
  int bol = 1, directive = 0, after_lines = 0;
  while (r < n) {
    char c = t[r];
    if (c == '/' && r + 1 < n && (t[r + 1] == '*' || t[r + 1] == '/')) {
      size_t e = r + 2;
      if (t[r + 1] == '/') {
        while (e < n && t[e] != '\n') e++;
      } else {
        while (e + 1 < n && !(t[e] == '*' && t[e + 1] == '/')) e++;
        e = e + 1 < n ? e + 2 : n;
      }
      if (t[r + 1] == '*' && !directive && memchr(t + r, '\n', e - r) != NULL) {
        t[w++] = '\n';
        bol = after_lines = 1;
      } else {
        t[w++] = ' ';
      }
      r = e;
    } else if (c == '\n') {
      t[w++] = t[r++];
      bol = 1;
      directive = after_lines = 0;
    } else if (is_blank(c)) {
      t[w++] = t[r++];
    } else {
      if (bol && (c == '#' || (c == '%' && r + 1 < n && t[r + 1] == ':'))) {
        directive = 1;
        if (after_lines || c == '%') s->unsure = 1;
      }
      bol = after_lines = 0;
      if (c == '"' || c == '\'') copy_literal(t, n, &r, &w);
      else t[w++] = t[r++];
    }
  }
  return w;
}

/* True when t holds a trigraph (clang replaces them in OpenCL C). */
static int has_trigraph(const char *t, size_t n) {
  size_t i;
  for (i = 0; i + 2 < n; i++)
    if (t[i] == '?' && t[i + 1] == '?' && strchr("=/'()!<>-", t[i + 2]) != NULL &&
        t[i + 2] != '\0')
      return 1;
  return 0;
}

static void scan(Scan *s, const char *src, size_t len, const char *curdir, int depth);

/* Tries dir/name (name alone when dir is "") as a file; returns 1 and
** leaves it in path when it is one. */
static int try_path(Scan *s, char *path, size_t size, const char *dir, const char *name) {
  int n = dir == NULL ? -1 : dir[0] == '\0' ? snprintf(path, size, "%s", name)
                                            : snprintf(path, size, "%s/%s", dir, name);
  return n >= 0 && (size_t)n < size && is_file(s, name, path);
}

/* Finds name as the compiler would (quoted: curdir first, then every -I
** folder in order), hashes its content once, and scans it in turn. A file
** not found is hashed by name. */
static void include_file(Scan *s, const char *name, int quoted, const char *curdir,
                         int depth) {
  char path[PATH_MAX], real[PATH_MAX], *text, *slash;
  size_t n = 0;
  int i, found = 0;
  if (name[0] == '/') {
    found = try_path(s, path, sizeof path, "", name);   /* absolute */
  } else {
    found = quoted && try_path(s, path, sizeof path, curdir, name);
    for (i = 0; !found && i < s->ndirs; i++)
      found = try_path(s, path, sizeof path, s->dirs[i], name);
  }
  if (!found || realpath(path, real) == NULL) {
    lg_hash_update(s->h, "missing ", 8);
    lg_hash_update(s->h, name, strlen(name) + 1);
    return;
  }
  for (i = 0; i < s->nseen; i++)
    if (strcmp(s->seen[i], real) == 0) return;
  if (s->nseen == MAX_INCLUDES || depth >= MAX_DEPTH) {
    /* past the scan's limits its includes go unchecked, and one of them
       may be a FIFO the compiler would wait on for ever: refused */
    if (s->bad[0] == '\0')
      snprintf(s->bad, s->badsize, "the include \"%s\" is past what luagpu checks (%s): a "
               "build whose includes cannot all be checked is refused", name,
               depth >= MAX_DEPTH ? "includes nested " LG_STR(MAX_DEPTH) " deep"
                                  : LG_STR(MAX_INCLUDES) " files included");
    s->unsure = 1;
    return;
  }
  if ((text = read_file(path, &n)) == NULL) {
    s->unsure = 1;
    return;
  }
  if ((s->seen[s->nseen] = malloc(strlen(real) + 1)) == NULL) {
    free(text);
    s->unsure = 1;
    return;
  }
  strcpy(s->seen[s->nseen++], real);
  lg_hash_update(s->h, "include ", 8);
  lg_hash_update(s->h, real, strlen(real) + 1);
  lg_hash_update(s->h, &n, sizeof n);
  lg_hash_update(s->h, text, n);
  slash = strrchr(path, '/');
  if (slash != NULL) *slash = '\0';
  scan(s, text, n, slash != NULL ? path : ".", depth + 1);
  free(text);
}

/* The definition of the object-like macro w (n chars) as a file name:
** its operand's text, or NULL (none, or defined twice: *twice set). */
static const char *file_macro(Scan *s, const char *w, size_t n, int *twice) {
  const char *found = NULL;
  int i;
  *twice = 0;
  for (i = 0; i < s->ndefs; i++)
    if (strlen(s->defs[i]) == n && memcmp(s->defs[i], w, n) == 0) {
      if (found != NULL) *twice = 1;
      found = s->defs[i] + n + 1;
    }
  return *twice ? NULL : found;
}

/* #define NAME "file" / <file> (at q, after the word define): noted. */
static void note_define(Scan *s, const char *q, const char *eol) {
  const char *w, *v, *e;
  char *d;
  size_t n;
  while (q < eol && is_blank(*q)) q++;
  for (w = q; q < eol && is_ident(*q); q++) {}
  n = (size_t)(q - w);
  if (n == 0 || (q < eol && !is_blank(*q))) return;   /* none, or function-like */
  while (q < eol && is_blank(*q)) q++;
  v = q;
  if (q >= eol || (*q != '"' && *q != '<')) return;
  e = memchr(q + 1, *q == '"' ? '"' : '>', (size_t)(eol - q - 1));
  if (e == NULL || s->ndefs >= MAX_DEFINES) return;
  d = malloc(n + 1 + (size_t)(e - v + 1) + 1);
  if (d == NULL) return;
  memcpy(d, w, n);
  d[n] = '\0';
  memcpy(d + n + 1, v, (size_t)(e - v + 1));
  d[n + 1 + (e - v + 1)] = '\0';
  s->defs[s->ndefs++] = d;
}

/* Reads the operand "name" or <name> at q (blanks before it skipped) and
** includes that file; a macro the source defines as a file name is
** followed to it (as the compiler expands it); any other macro names a
** file the scan cannot see, which may be a FIFO that would block the
** compiler for ever: the build is refused. Returns where the operand ends. */
static const char *operand(Scan *s, const char *q, const char *eol, const char *curdir,
                           int depth) {
  char close, name[PATH_MAX];
  const char *e;
  while (q < eol && is_blank(*q)) q++;
  if (q < eol && is_ident(*q) && !(*q >= '0' && *q <= '9')) {
    const char *w = q, *def;
    int twice;
    while (q < eol && is_ident(*q)) q++;
    def = file_macro(s, w, (size_t)(q - w), &twice);
    s->unsure = 1;               /* (an #ifdef may choose another definition) */
    if (def != NULL) {
      operand(s, def, def + strlen(def), curdir, depth);
      return q;
    }
    if (s->bad[0] == '\0')
      snprintf(s->bad, s->badsize, "an #include of the macro %.*s cannot be checked before "
               "the compiler opens its file (a FIFO would block it): %s", (int)(q - w), w,
               twice ? "it is defined twice" : "define it in the source as \"file\" or <file>, "
               "or write the file's name");
    return eol;
  }
  close = q < eol && *q == '"' ? '"' : q < eol && *q == '<' ? '>' : 0;
  if (!close || (e = memchr(q + 1, close, (size_t)(eol - q - 1))) == NULL ||
      (size_t)(e - q - 1) >= sizeof name || memchr(q + 1, '\0', (size_t)(e - q - 1)) != NULL) {
    s->unsure = 1;
    return eol;
  }
  memcpy(name, q + 1, (size_t)(e - q - 1));
  name[e - q - 1] = '\0';
  include_file(s, name, close == '"', curdir, depth);
  return e + 1;
}

/* The directive whose name starts at q: includes its file for #include;
** #include_next and #import make the scan unsure; every __has_include(...)
** of the line (for #if, #elif) counts as an include. */
static void directive(Scan *s, const char *q, const char *eol, const char *curdir, int depth) {
  const char *w;
  size_t n;
  while (q < eol && is_blank(*q)) q++;
  for (w = q; q < eol && is_ident(*q); q++) {}
  n = (size_t)(q - w);
  if (n == 7 && memcmp(w, "include", 7) == 0) q = operand(s, q, eol, curdir, depth);
  else if (n == 6 && memcmp(w, "define", 6) == 0) note_define(s, q, eol);
  else if ((n == 12 && memcmp(w, "include_next", 12) == 0) || (n == 6 && memcmp(w, "import", 6) == 0))
    s->unsure = 1;
  while (q < eol) {
    if (!is_ident(*q)) { q++; continue; }
    for (w = q; q < eol && is_ident(*q); q++) {}
    n = (size_t)(q - w);
    if ((n == 13 && memcmp(w, "__has_include", 13) == 0) ||
        (n == 18 && memcmp(w, "__has_include_next", 18) == 0)) {
      while (q < eol && is_blank(*q)) q++;
      if (q < eol && *q == '(' && n == 18) s->unsure = 1;   /* not ifdef __has_include */
      else if (q < eol && *q == '(') q = operand(s, q + 1, eol, curdir, depth);
    }
  }
}

/* Scans one file's text (the source itself at depth 0) for directives. */
static void scan(Scan *s, const char *src, size_t len, const char *curdir, int depth) {
  char *t = malloc(len + 1);
  const char *p, *end;
  if (t == NULL) { s->unsure = 1; return; }
  memcpy(t, src, len);
  if (has_trigraph(t, len)) s->unsure = 1;
  len = uncomment(s, t, splice(t, len));
  for (p = t, end = t + len; p < end;) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p;
    if (eol == NULL) eol = end;
    while (q < eol && is_blank(*q)) q++;
    if (q < eol && *q == '#') directive(s, q + 1, eol, curdir, depth);
    else if (q + 1 < eol && q[0] == '%' && q[1] == ':')      /* the digraph of # */
      directive(s, q + 2, eol, curdir, depth);
    p = eol + 1;
  }
  free(t);
}

int lg_hash_includes(lg_Hash *h, const char *source, size_t len,
                     const char *const *dirs, int ndirs, char *bad, size_t badsize) {
  Scan s;
  int i;
  bad[0] = '\0';
  s.bad = bad;
  s.badsize = badsize;
  s.h = h;
  s.dirs = dirs;
  s.ndirs = ndirs;
  s.nseen = 0;
  s.ndefs = 0;
  s.unsure = 0;
  scan(&s, source, len, ndirs > 0 ? dirs[0] : NULL, 0);
  for (i = 0; i < s.nseen; i++) free(s.seen[i]);
  for (i = 0; i < s.ndefs; i++) free(s.defs[i]);
  return !s.unsure;
}

