# bench_gemm: host GEMM backends side by side (oneDNN fp32/bf16, OpenBLAS) at the presets' shapes and 2048^3,
# with the measured per-core FMA peaks (see bench_gemm.cpp).
add_executable(bench_gemm ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.cpp)
target_link_libraries(bench_gemm PRIVATE gridtrain_kernels gridtrain_core gridtrain_options)
if(GRIDTRAIN_HAVE_ONEDNN)
  target_compile_definitions(bench_gemm PRIVATE GRIDTRAIN_HAVE_ONEDNN=1)
  target_link_libraries(bench_gemm PRIVATE DNNL::dnnl)
endif()
