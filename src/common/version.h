/*
 * version.h - vramctl's version, in one place: `vramctl --version`, the
 * Prometheus vramctl_build_info metric and the packages read it here.
 */
#ifndef VRAMCTL_VERSION_H
#define VRAMCTL_VERSION_H

/* Written once, in debian/changelog's first line (dpkg reads it there);
 * the Makefile passes it to every object as VRAMCTL_VERSION_TEXT. */
#ifndef VRAMCTL_VERSION_TEXT
#error "VRAMCTL_VERSION_TEXT is set by the Makefile, from debian/changelog"
#endif
#define VRAMCTL_VERSION VRAMCTL_VERSION_TEXT

#endif /* VRAMCTL_VERSION_H */
