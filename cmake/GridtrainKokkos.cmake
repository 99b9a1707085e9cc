# Finds Kokkos and repairs the imported target of Debian's Trilinos-bundled Kokkos 3.4.
#
# Debian 12 (libtrilinos-kokkos-dev) ships a Kokkos::kokkos target whose include directory is the
# non-existent <prefix>/include (it should be <prefix>/include/trilinos) and whose link interface carries
# the bogus entry "-DKOKKOS_DEPENDENCE". The config itself sets Kokkos_INCLUDE_DIRS correctly, so we use
# that to mend the target. For an upstream Kokkos 4.x install (Spack, CUDA) every check below is false and
# this module changes nothing.

find_package(Kokkos REQUIRED)

set(GRIDTRAIN_KOKKOS_REPAIRED OFF)
if(TARGET Kokkos::kokkos)
  get_target_property(_gt_kk_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_gt_kk_good_inc "")
  set(_gt_kk_bad FALSE)
  if(_gt_kk_inc)
    foreach(_d IN LISTS _gt_kk_inc)
      if(_d MATCHES "^\\$<" OR EXISTS "${_d}/Kokkos_Core.hpp")
        list(APPEND _gt_kk_good_inc "${_d}")
      else()
        set(_gt_kk_bad TRUE)
      endif()
    endforeach()
  endif()
  if(_gt_kk_bad AND Kokkos_INCLUDE_DIRS)
    foreach(_d IN LISTS Kokkos_INCLUDE_DIRS)
      get_filename_component(_d "${_d}" REALPATH)
      if(EXISTS "${_d}/Kokkos_Core.hpp")
        list(APPEND _gt_kk_good_inc "${_d}")
      endif()
    endforeach()
    if(NOT _gt_kk_good_inc)
      message(FATAL_ERROR "Kokkos: the imported target's include path is broken and Kokkos_INCLUDE_DIRS "
                          "(${Kokkos_INCLUDE_DIRS}) has no Kokkos_Core.hpp")
    endif()
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_gt_kk_good_inc}")
    set(GRIDTRAIN_KOKKOS_REPAIRED ON)
  endif()
  get_target_property(_gt_kk_libs Kokkos::kokkos INTERFACE_LINK_LIBRARIES)
  if(_gt_kk_libs AND "${_gt_kk_libs}" MATCHES "-DKOKKOS_DEPENDENCE")
    list(REMOVE_ITEM _gt_kk_libs "-DKOKKOS_DEPENDENCE")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_LINK_LIBRARIES "${_gt_kk_libs}")
    set(GRIDTRAIN_KOKKOS_REPAIRED ON)
  endif()
else()
  message(FATAL_ERROR "Kokkos was found but defines no Kokkos::kokkos target")
endif()

if(GRIDTRAIN_KOKKOS_REPAIRED)
  message(STATUS "Kokkos ${Kokkos_VERSION}: repaired the Debian/Trilinos imported target")
else()
  message(STATUS "Kokkos ${Kokkos_VERSION}: imported target used as installed")
endif()

# Whether this Kokkos has the CUDA backend (upstream exports Kokkos_DEVICES / kokkos_check).
set(GRIDTRAIN_KOKKOS_HAS_CUDA OFF)
if(Kokkos_DEVICES MATCHES "CUDA" OR Kokkos_ENABLE_CUDA)
  set(GRIDTRAIN_KOKKOS_HAS_CUDA ON)
endif()
message(STATUS "Kokkos devices: ${Kokkos_DEVICES}")
