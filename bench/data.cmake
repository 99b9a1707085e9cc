# bench_data: prepare throughput (byte, GPT-2 BPE) and reader tokens/s (direct, prefetch) at the `small` batch
# shape against what training consumes (see the source header).
add_executable(bench_data ${CMAKE_CURRENT_LIST_DIR}/bench_data.cpp)
target_link_libraries(bench_data PRIVATE gridtrain_data gridtrain_options)
target_compile_definitions(bench_data PRIVATE GRIDTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
