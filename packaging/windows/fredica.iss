; Fredica's Windows installer (Inno Setup 6 or later).
;
; packaging/windows.py renders this template (it puts the file associations of
; packaging/mediatypes.py where the "@generated" line is) and compiles it:
;
;   iscc /DAppVersion=1.2.3 /DNumericVersion=1.2.3 /DBundleDir=...\dist\fredica
;        /DIconFile=...\fredica.ico /O...\dist /FFredica-1.2.3-setup fredica.iss
;
; What it installs, and what it never touches:
; - the whole bundle folder (fredica-gui.exe, the window; fredica.exe, the command line;
;   and _internal\), for the current user only: no
;   administrator rights are asked for, {autopf} is %LOCALAPPDATA%\Programs;
; - a Start menu entry, and on request a desktop icon;
; - on request, "Open with > Fredica" for the media types (per user, under
;   HKCU\Software\Classes): OpenWithProgids only, so the user's default player stays
;   the default;
; - an uninstaller that removes exactly that. Fredica's data (library, database,
;   settings, logs) lives in the user's AppData folders, which the app owns: the
;   uninstaller leaves it alone, so a reinstall finds the library as it was.

#ifndef AppVersion
  #error Pass the version on the command line: iscc /DAppVersion=1.2.3 fredica.iss
#endif
#ifndef NumericVersion
  #define NumericVersion "0.0.0"
#endif
#ifndef BundleDir
  #define BundleDir AddBackslash(SourcePath) + "..\..\dist\fredica"
#endif
#ifndef IconFile
  #define IconFile AddBackslash(SourcePath) + "..\..\build\icons\fredica.ico"
#endif
; The window's executable (no console); fredica.exe beside it is the command line.
#define AppExe "fredica-gui.exe"

[Setup]
; The AppId identifies Fredica to Windows across versions (upgrades, uninstall): never change it.
AppId={{0D8F073C-CA17-4AE9-B442-B156B5EA9F92}
AppName=Fredica
AppVersion={#AppVersion}
AppVerName=Fredica {#AppVersion}
AppPublisher=Fredica
VersionInfoVersion={#NumericVersion}
DefaultDirName={autopf}\Fredica
DefaultGroupName=Fredica
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
; Qt 6 runs on Windows 10 and later.
MinVersion=10.0
ChangesAssociations=yes
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName=Fredica
WizardStyle=modern
Compression=lzma2
SolidCompression=yes
OutputDir={#AddBackslash(SourcePath)}..\..\dist
OutputBaseFilename=Fredica-{#AppVersion}-setup

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"
#ifexist AddBackslash(CompilerPath) + "Languages\ChineseSimplified.isl"
Name: "chinesesimplified"; MessagesFile: "compiler:Languages\ChineseSimplified.isl"
#endif

[CustomMessages]
AssociateMedia=Offer Fredica in "Open with" for video and audio files
FileAssociations=File types:
VideoFile=Video file
AudioFile=Audio file
#ifexist AddBackslash(CompilerPath) + "Languages\ChineseSimplified.isl"
chinesesimplified.AssociateMedia=在视频和音频文件的“打开方式”中提供 Fredica
chinesesimplified.FileAssociations=文件类型：
chinesesimplified.VideoFile=视频文件
chinesesimplified.AudioFile=音频文件
#endif

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "associate"; Description: "{cm:AssociateMedia}"; GroupDescription: "{cm:FileAssociations}"; Flags: unchecked

[InstallDelete]
; An upgrade replaces the bundle's libraries as a whole: a library left from the previous
; version could be loaded by the new one. Only the installed program's folder.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Fredica"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\Fredica"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; @generated: file associations (packaging/windows.py fills them in from packaging/mediatypes.py)

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,Fredica}"; Flags: nowait postinstall skipifsilent
