/* \file export.h
 * CHORUS_API marks what libchorus exports: the public classes and functions
 * of these headers and the C ABI. The library is built with
 * -fvisibility=hidden, so everything else (chorus::detail, MPI glue) stays
 * inside it. C and C++. */
#ifndef CHORUS_EXPORT_H_
#define CHORUS_EXPORT_H_

/* CHORUS_LOCAL keeps a private member of an exported class inside. */
#if defined(__GNUC__) || defined(__clang__)
#define CHORUS_API __attribute__((visibility("default")))
#define CHORUS_LOCAL __attribute__((visibility("hidden")))
#else
#define CHORUS_API
#define CHORUS_LOCAL
#endif

#endif /* CHORUS_EXPORT_H_ */
