# `cmake --install`: the public headers, the libraries (shared and static), the packfs program
# with its man pages and bash completion,
# a CMake package (find_package(PackFS): PackFS::packfs, PackFS::read, and with COMPONENTS
# static PackFS::packfs_static, PackFS::read_static) and pkg-config files (packfs.pc,
# packfs-read.pc). docs/INSTALL.md says how a program uses each.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(packfs_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/PackFS)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/packfs
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

set_target_properties(packfs_read PROPERTIES EXPORT_NAME read_static)
set_target_properties(packfs PROPERTIES EXPORT_NAME packfs_static)
install(TARGETS packfs_read packfs EXPORT PackFSStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT PackFSStaticTargets NAMESPACE PackFS:: DESTINATION ${packfs_cmake_dir}
  COMPONENT dev)
if(PACKFS_SHARED)
  set_target_properties(packfs_read_shared PROPERTIES EXPORT_NAME read)
  set_target_properties(packfs_shared PROPERTIES EXPORT_NAME packfs)
  install(TARGETS packfs_read_shared packfs_shared EXPORT PackFSTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT PackFSTargets NAMESPACE PackFS:: DESTINATION ${packfs_cmake_dir} COMPONENT dev)
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/PackFSConfig.cmake.in
  ${PROJECT_BINARY_DIR}/PackFSConfig.cmake INSTALL_DESTINATION ${packfs_cmake_dir})
# 0.x: a minor release may change the API, so only the same minor version satisfies a request.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/PackFSConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/PackFSConfig.cmake ${PROJECT_BINARY_DIR}/PackFSConfigVersion.cmake
  DESTINATION ${packfs_cmake_dir} COMPONENT dev)

# pkg-config files name their prefix relative to where they are installed, so a tree installed
# under another root (DESTDIR, dpkg --root) still finds itself.
file(RELATIVE_PATH packfs_pc_prefix "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
set(packfs_pc_prefix "\${pcfiledir}/${packfs_pc_prefix}")
string(REGEX REPLACE "/$" "" packfs_pc_prefix "${packfs_pc_prefix}")
foreach(pc packfs packfs-read)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT dev)
endforeach()

if(TARGET packfs_cli)
  install(TARGETS packfs_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bin)
  # Made from the program's --help by tools/cli/CMakeLists.txt.
  install(DIRECTORY ${PROJECT_BINARY_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
    COMPONENT bin FILES_MATCHING PATTERN "*.1.gz")
  install(FILES ${PROJECT_BINARY_DIR}/completion/packfs
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT bin)
endif()

if(TARGET packfs_python)  # the Python module (python/CMakeLists.txt), with the program
  install(TARGETS packfs_python LIBRARY DESTINATION ${PACKFS_PYTHON_DIR} COMPONENT bin)
endif()
