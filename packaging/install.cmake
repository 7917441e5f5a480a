# `cmake --install BUILD [--prefix DIR]`: the two programs, libonce (static
# and shared), the public headers, a pkg-config file (once.pc) and a CMake
# package (find_package(once): once::once, once::once_static). Every file
# that names a path names it relative to where it is installed, so the tree
# can be installed under any prefix and moved.
include(CMakePackageConfigHelpers)

install(TARGETS once RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# A daemon (onced(8)): sbin, as Debian puts daemons.
install(TARGETS onced RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(TARGETS libonce libonce_shared EXPORT onceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/once DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# pkg-config: `pkg-config --cflags --libs once` (shared), `--static` for
# libonce.a with everything it links. The libraries libonce links are
# Libs.private, resolved now, not Requires.private: pkg-config adds the
# Cflags of every Requires.private module to `--cflags`, and once's headers
# need none of them (only libc's), so a consumer's Cflags are
# -I${includedir} alone, never a backend's include paths (libpq's, hiredis').
# Each library's flags are kept at their last place, after everything that
# links it, as a static link needs them.
set(ONCE_PC_LIBS_PRIVATE "")
foreach(pair ${ONCE_PC_MODULES})
  string(REGEX REPLACE "=.*$" "" prefix "${pair}")
  list(APPEND ONCE_PC_LIBS_PRIVATE ${${prefix}_STATIC_LDFLAGS})
endforeach()
list(APPEND ONCE_PC_LIBS_PRIVATE -pthread -lm)
list(REVERSE ONCE_PC_LIBS_PRIVATE)
list(REMOVE_DUPLICATES ONCE_PC_LIBS_PRIVATE)
list(REVERSE ONCE_PC_LIBS_PRIVATE)
string(JOIN " " ONCE_PC_LIBS_PRIVATE ${ONCE_PC_LIBS_PRIVATE})
file(RELATIVE_PATH ONCE_PC_UP "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
string(REGEX REPLACE "/$" "" ONCE_PC_UP "${ONCE_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/packaging/once.pc.in ${CMAKE_BINARY_DIR}/once.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/once.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake: find_package(once CONFIG) -> once::once (libonce.so) and
# once::once_static (libonce.a; its libraries are found again through
# pkg-config, under the names libonce was built with).
set(ONCE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/once)
install(EXPORT onceTargets NAMESPACE once:: DESTINATION ${ONCE_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/packaging/onceConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/onceConfig.cmake
                              INSTALL_DESTINATION ${ONCE_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/onceConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/onceConfig.cmake ${CMAKE_BINARY_DIR}/onceConfigVersion.cmake
        DESTINATION ${ONCE_CMAKE_DIR})

install(FILES ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The systemd unit, with ExecStart naming the onced installed above: the
# prefix is known only when `cmake --install --prefix` runs, so the file is
# written then. An onced built without libsystemd (-DONCE_SYSTEMD=OFF)
# never says READY=1: its unit is Type=exec (started once exec'd).
# The sample settings go with the documentation.
# -DONCE_SERVICE_USER=NAME: the unit runs as that existing system user (a
# package creates it: debian/onced.postinst) instead of one systemd makes up
# at each start (DynamicUser=), so the state directory has a known owner.
set(ONCE_SERVICE_USER "" CACHE STRING "System user onced.service runs as (empty: DynamicUser=yes)")
set(_once_unit_user "DynamicUser=yes")
if(ONCE_SERVICE_USER)
  set(_once_unit_user "User=${ONCE_SERVICE_USER}\\nGroup=${ONCE_SERVICE_USER}")
endif()
set(_once_unit_src ${CMAKE_SOURCE_DIR}/packaging/onced.service)
install(CODE "
  set(_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
  file(READ \"${_once_unit_src}\" _unit)
  string(REPLACE \"ExecStart=/usr/local/sbin/onced\"
         \"ExecStart=\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SBINDIR}/onced\"
         _unit \"\${_unit}\")
  string(REPLACE \"DynamicUser=yes\" \"${_once_unit_user}\" _unit \"\${_unit}\")
  message(STATUS \"Installing: \${_dir}/onced.service\")
  file(MAKE_DIRECTORY \"\${_dir}\")
  file(WRITE \"\${_dir}/onced.service\" \"\${_unit}\")
")
if(NOT ONCE_SYSTEMD)
  install(CODE "
    set(_f \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/onced.service\")
    file(READ \"\${_f}\" _unit)
    string(REPLACE \"Type=notify\nNotifyAccess=main\n\" \"Type=exec\n\" _unit \"\${_unit}\")
    file(WRITE \"\${_f}\" \"\${_unit}\")
  ")
endif()
install(FILES ${CMAKE_SOURCE_DIR}/packaging/onced.env DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Monitoring to start from: Prometheus alert rules, a Grafana dashboard.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/prometheus-alerts.yml
              ${CMAKE_SOURCE_DIR}/packaging/grafana-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

install(FILES ${CMAKE_SOURCE_DIR}/man/once.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/man/onced.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
