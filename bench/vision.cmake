# bench_vision: a short ResNet-20 run on Fashion-MNIST (img/s and test accuracy; see bench_vision.cpp, docs/vision.md)
add_executable(bench_vision ${CMAKE_CURRENT_LIST_DIR}/bench_vision.cpp)
target_link_libraries(bench_vision PRIVATE gridtrain_vision gridtrain_options)
