// Only included under `#ifdef HEADER_UNUSED`, which no test defines: its kernel gets no launcher.
#pragma once
extern "C" __global__ void from_inactive_include(float* y) { y[0] = 1.0f; }
