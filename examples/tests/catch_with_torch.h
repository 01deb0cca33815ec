#pragma once
/// \file catch_with_torch.h
/// Catch2 in a file that also includes LibTorch: Debian's LibTorch headers
/// pull in glog, whose CHECK macro would replace Catch2's. Include this
/// after the torch headers.

#include <torch/types.h>

#undef CHECK
#include <catch2/catch.hpp>
