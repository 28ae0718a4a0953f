/*
 * version.h - vramctl's version, in one place: `vramctl --version`, the
 * Prometheus vramctl_build_info metric and the packages read it here.
 */
#ifndef VRAMCTL_VERSION_H
#define VRAMCTL_VERSION_H

#define VRAMCTL_VERSION "0.1.0"

#endif /* VRAMCTL_VERSION_H */
