add_executable(bench_step ${CMAKE_CURRENT_LIST_DIR}/bench_step.cpp ${PROJECT_SOURCE_DIR}/src/train/metrics.cpp)
target_link_libraries(bench_step PRIVATE gridtrain_model gridtrain_options)
